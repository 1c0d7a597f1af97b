//! The floors of each crate: no import cycle among a crate's top-level modules, and an
//! import that points up a floor only with a one-line reason.
//!
//! The rules, checked on the source of every workspace crate (`crates/*/src` and `src/`):
//! - A crate's top-level modules are the files `src/a.rs` and directories `src/a/` its
//!   root (`lib.rs`, `main.rs`) declares with `mod a;`. A module written inline in the
//!   root (`mod tests { … }`) belongs to the root.
//! - A reference from anywhere inside module `a` (any depth, tests included) to
//!   `crate::b…` — a path, a `use`, each member of a `use crate::{b::x, c::y}` group — is an
//!   edge `a → b`; so is a `super::` chain that climbs out of `a` to the root and names
//!   `b`. `self::` and `super::` within `a` are not edges, nor is a reference to the root's
//!   own items (`crate::Nanos`, re-exported in `lib.rs`).
//! - (a) No cycle among a crate's top-level modules.
//! - (b) The floors are the order of the `mod` declarations in the root, lowest first. An
//!   edge to a module declared after its own points up a floor and must carry a comment
//!   `// up: <reason>` on its line or the line before (for a `use` group spread over lines:
//!   the member's line, or the `crate::` line, or the line before either).
//!
//! rustfmt sorts the `mod` lines of a group (lines not parted by a blank line): a root
//! writes each floor as its own group, the modules of one floor being those that do not
//! use each other.
//!
//! The parser is deliberately small: comments, string and char literals are blanked first
//! (keeping every line where it was), then paths are read from the tokens that remain.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};

/// Crates not held to the rules (none: every crate is). A crate being restructured may be
/// listed here for a while; its findings are then printed (`cargo test layers --
/// --nocapture`), not asserted.
const PENDING: &[&str] = &[];

/// One crate: its root file, its floors (top-level modules, lowest first) and the files of
/// each module.
struct Crate {
    /// Where it lives, relative to the workspace (`crates/core`, or `src` for the root
    /// package's binary).
    name: String,
    root: String,
    floors: Vec<String>,
    files: Vec<SourceFile>,
}

struct SourceFile {
    /// Relative to the workspace, for messages.
    path: String,
    /// The top-level module it belongs to.
    module: String,
    /// How deep its own module is below the crate root: `src/a.rs` and `src/a/mod.rs` are 1,
    /// `src/a/x.rs` 2.
    depth: usize,
    text: String,
}

/// A reference from one top-level module to another.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Edge {
    from: String,
    to: String,
    path: String,
    line: usize,
    /// An `// up: <reason>` comment sits on its line or the line before.
    reason: bool,
}

/// What the rules found in one crate, as messages naming file and line.
#[derive(Default)]
struct Findings {
    cycles: Vec<String>,
    unexplained_up: Vec<String>,
}

// ---------------------------------------------------------------------------------------
// Reading the workspace

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every crate of the workspace: a `lib.rs` or a `main.rs` under `crates/*/src` and `src/`.
fn crates() -> Vec<Crate> {
    let ws = workspace();
    let mut dirs: Vec<PathBuf> = fs::read_dir(ws.join("crates"))
        .expect("crates/ is readable")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    dirs.sort();
    dirs.push(ws.clone());
    let mut out = Vec::new();
    for dir in dirs {
        let name = match dir.strip_prefix(&ws).expect("inside the workspace") {
            p if p.as_os_str().is_empty() => "src".to_string(),
            p => p.to_string_lossy().into_owned(),
        };
        for root in ["lib.rs", "main.rs"] {
            let root_path = dir.join("src").join(root);
            if root_path.is_file() {
                out.push(load(&ws, &name, &root_path));
            }
        }
    }
    out
}

fn load(ws: &Path, name: &str, root_path: &Path) -> Crate {
    let src = root_path.parent().expect("src/");
    let root_text = fs::read_to_string(root_path).expect("the crate root is readable");
    let declared = top_level_mods(&blank(&root_text));
    let rel = |p: &Path| {
        p.strip_prefix(ws)
            .expect("inside the workspace")
            .to_string_lossy()
            .into_owned()
    };
    let mut floors = Vec::new();
    let mut files = Vec::new();
    for module in declared {
        let mut paths = Vec::new();
        let file = src.join(format!("{module}.rs"));
        if file.is_file() {
            paths.push(file);
        }
        rust_files(&src.join(&module), &mut paths);
        if paths.is_empty() {
            continue; // `#[path]` or generated: not a file we can read
        }
        paths.sort();
        for path in paths {
            let inner = path
                .strip_prefix(src)
                .expect("under src/")
                .with_extension("");
            let mut parts: Vec<_> = inner.components().collect();
            if parts.last().is_some_and(|c| c.as_os_str() == "mod") {
                parts.pop();
            }
            files.push(SourceFile {
                path: rel(&path),
                module: module.clone(),
                depth: parts.len(),
                text: fs::read_to_string(&path).expect("a source file is readable"),
            });
        }
        floors.push(module);
    }
    Crate {
        name: name.to_string(),
        root: rel(root_path),
        floors,
        files,
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Parsing

/// The text with every comment, string literal and char literal replaced by spaces
/// (newlines kept, so lines stay where they were).
fn blank(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out: Vec<char> = Vec::with_capacity(chars.len());
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    // Blanks chars[from..to] into `out`.
    let put_blank = |out: &mut Vec<char>, s: &[char]| {
        out.extend(s.iter().map(|&c| if c == '\n' { '\n' } else { ' ' }));
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let prev_ident = i > 0 && ident(chars[i - 1]);
        if c == '/' && next == Some('/') {
            let end = chars[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(chars.len(), |n| i + n);
            put_blank(&mut out, &chars[i..end]);
            i = end;
        } else if c == '/' && next == Some('*') {
            let (mut j, mut depth) = (i + 2, 1);
            while j < chars.len() && depth > 0 {
                if chars[j] == '/' && chars.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if chars[j] == '*' && chars.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            put_blank(&mut out, &chars[i..j]);
            i = j;
        } else if !prev_ident && (c == 'r' || (c == 'b' && next == Some('r'))) && {
            // A raw string: r"…", r#"…"#, br#"…"#.
            let mut j = if c == 'b' { i + 2 } else { i + 1 };
            while chars.get(j) == Some(&'#') {
                j += 1;
            }
            chars.get(j) == Some(&'"')
        } {
            let start = if c == 'b' { i + 2 } else { i + 1 };
            let hashes = chars[start..].iter().take_while(|&&c| c == '#').count();
            let mut j = start + hashes + 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"'
                    && chars[j + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&c| c == '#')
                        .count()
                        == hashes
                {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            put_blank(&mut out, &chars[i..j.min(chars.len())]);
            i = j.min(chars.len());
        } else if c == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(chars.len());
            put_blank(&mut out, &chars[i..end]);
            i = end;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{1F600}', '\''), or a lifetime ('a), kept.
            if next == Some('\\') {
                let mut j = i + 2;
                j += 1; // the escaped char, which may be a quote
                while j < chars.len() && chars[j] != '\'' {
                    j += 1;
                }
                let end = (j + 1).min(chars.len());
                put_blank(&mut out, &chars[i..end]);
                i = end;
            } else if chars.get(i + 2) == Some(&'\'') {
                put_blank(&mut out, &chars[i..i + 3]);
                i += 3;
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out.into_iter().collect()
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Other(char),
}

/// Tokens with their line (1-based) of blanked text.
fn tokens(blanked: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = blanked.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' || c == '$' {
            let start = i;
            i += 1;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let word = word.strip_prefix("r#").map(str::to_string).unwrap_or(word);
            out.push((Token::Ident(word), line));
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push((Token::PathSep, line));
            i += 2;
        } else {
            out.push((
                match c {
                    '{' => Token::Open,
                    '}' => Token::Close,
                    ',' => Token::Comma,
                    c => Token::Other(c),
                },
                line,
            ));
            i += 1;
        }
    }
    out
}

/// The `mod a;` declarations at the top level of a crate root, in order (inline
/// `mod a { … }` ones are the root's own).
fn top_level_mods(blanked: &str) -> Vec<String> {
    let toks = tokens(blanked);
    let mut depth = 0usize;
    let mut out = Vec::new();
    for (i, (t, _)) in toks.iter().enumerate() {
        match t {
            Token::Open => depth += 1,
            Token::Close => depth = depth.saturating_sub(1),
            Token::Ident(w) if w == "mod" && depth == 0 => {
                if let (Some((Token::Ident(name), _)), Some((Token::Other(';'), _))) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    out.push(name.clone());
                }
            }
            _ => {}
        }
    }
    out
}

/// The first segments of the paths a path prefix leads to, from the token at `i` (just
/// after the prefix's `::`): `b` in `b::x`, or `b` and `c` in `{b::x, c::{y, z}}`.
fn heads(toks: &[(Token, usize)], i: usize) -> Vec<(String, usize, usize)> {
    match toks.get(i) {
        Some((Token::Ident(w), line)) => vec![(w.clone(), *line, i)],
        Some((Token::Open, _)) => {
            let mut out = Vec::new();
            let mut depth = 0;
            let mut expect_head = true;
            for (j, (t, line)) in toks.iter().enumerate().skip(i) {
                match t {
                    Token::Open => {
                        depth += 1;
                        expect_head = depth == 1;
                    }
                    Token::Close => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    Token::Comma if depth == 1 => expect_head = true,
                    Token::Ident(w) if expect_head && depth == 1 => {
                        out.push((w.clone(), *line, j));
                        expect_head = false;
                    }
                    _ => expect_head = false,
                }
            }
            out
        }
        _ => Vec::new(),
    }
}

/// Whether an `// up: <reason>` comment is on line `line` (1-based) of `text`.
fn says_up(text: &str, line: usize) -> bool {
    line >= 1
        && text.lines().nth(line - 1).is_some_and(|l| {
            l.split_once("// up:")
                .is_some_and(|(_, reason)| !reason.trim().is_empty())
        })
}

/// Every edge out of one file, in order.
fn file_edges(krate: &Crate, file: &SourceFile) -> Vec<Edge> {
    let modules: BTreeSet<&str> = krate.floors.iter().map(String::as_str).collect();
    let toks = tokens(&blank(&file.text));
    let mut out = Vec::new();
    // Inline modules (`mod tests { … }`) make paths inside them one `super::` deeper.
    let mut depth = 0usize;
    let mut inline: Vec<usize> = Vec::new();
    for i in 0..toks.len() {
        match &toks[i].0 {
            Token::Open => {
                depth += 1;
                continue;
            }
            Token::Close => {
                if inline.last() == Some(&depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                continue;
            }
            Token::Ident(w)
                if w == "mod"
                    && matches!(toks.get(i + 1), Some((Token::Ident(_), _)))
                    && matches!(toks.get(i + 2), Some((Token::Open, _))) =>
            {
                inline.push(depth + 1);
                continue;
            }
            _ => {}
        }
        let after_sep = i > 0 && toks[i - 1].0 == Token::PathSep;
        let Token::Ident(word) = &toks[i].0 else {
            continue;
        };
        if after_sep || toks.get(i + 1).map(|t| &t.0) != Some(&Token::PathSep) {
            continue;
        }
        let start_line = toks[i].1;
        let rest = match word.as_str() {
            "crate" | "$crate" => i + 2,
            "super" => {
                // Climb: each `super::` is one module up; only a chain that reaches the
                // root leaves this top-level module.
                let mut j = i;
                let mut climbs = 0;
                while toks.get(j).map(|t| &t.0) == Some(&Token::Ident("super".into()))
                    && toks.get(j + 1).map(|t| &t.0) == Some(&Token::PathSep)
                {
                    climbs += 1;
                    j += 2;
                }
                if climbs < file.depth + inline.len() {
                    continue;
                }
                j
            }
            _ => continue,
        };
        for (to, line, _) in heads(&toks, rest) {
            if to == file.module || !modules.contains(to.as_str()) {
                continue;
            }
            let reason = [
                line,
                line.saturating_sub(1),
                start_line,
                start_line.saturating_sub(1),
            ]
            .into_iter()
            .any(|l| says_up(&file.text, l));
            out.push(Edge {
                from: file.module.clone(),
                to,
                path: file.path.clone(),
                line,
                reason,
            });
        }
    }
    out
}

fn edges(krate: &Crate) -> Vec<Edge> {
    krate
        .files
        .iter()
        .flat_map(|f| file_edges(krate, f))
        .collect()
}

// ---------------------------------------------------------------------------------------
// The rules

fn check(krate: &Crate) -> Findings {
    let edges = edges(krate);
    let mut findings = Findings::default();
    // The first edge of each pair, for messages; the graph, sorted, for a stable answer.
    let mut first: BTreeMap<(&str, &str), &Edge> = BTreeMap::new();
    for e in &edges {
        first.entry((e.from.as_str(), e.to.as_str())).or_insert(e);
    }
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for &(a, b) in first.keys() {
        graph.entry(a).or_default().insert(b);
    }
    // (a) Cycles: for each module, the shortest cycle through it, each reported once.
    let mut seen: BTreeSet<Vec<&str>> = BTreeSet::new();
    for &start in graph.keys() {
        let Some(cycle) = shortest_cycle(&graph, start) else {
            continue;
        };
        let mut key = cycle.clone();
        key.sort_unstable();
        if !seen.insert(key) {
            continue;
        }
        let mut message = format!("{}: cycle {} -> {}", krate.name, cycle.join(" -> "), start);
        for (k, &a) in cycle.iter().enumerate() {
            let b = cycle[(k + 1) % cycle.len()];
            let e = first[&(a, b)];
            message += &format!("\n    {a} -> {b}: {}:{}", e.path, e.line);
        }
        findings.cycles.push(message);
    }
    // (b) Floors: the order of declaration in the root.
    let floor = |m: &str| krate.floors.iter().position(|f| f == m);
    for e in &edges {
        if floor(&e.to) > floor(&e.from) && !e.reason {
            findings.unexplained_up.push(format!(
                "{}:{}: {} -> {} points up a floor ({} is declared after {} in {}) without \
                 a `// up: <reason>` comment",
                e.path, e.line, e.from, e.to, e.to, e.from, krate.root
            ));
        }
    }
    findings
}

/// The shortest cycle through `start` (its modules, from `start`), by breadth-first search.
fn shortest_cycle<'a>(
    graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
    start: &'a str,
) -> Option<Vec<&'a str>> {
    let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(a) = queue.pop_front() {
        for &b in graph.get(a).into_iter().flatten() {
            if b == start {
                let mut cycle = vec![a];
                while let Some(&p) = parent.get(cycle.last().expect("not empty")) {
                    cycle.push(p);
                }
                if *cycle.last().expect("not empty") != start {
                    cycle.push(start);
                }
                cycle.reverse();
                return Some(cycle);
            }
            if b != start && !parent.contains_key(b) {
                parent.insert(b, a);
                queue.push_back(b);
            }
        }
    }
    None
}

/// The findings of every crate held to the rules (all but [`PENDING`]).
fn findings() -> Findings {
    let mut held = Findings::default();
    for krate in crates() {
        if PENDING.contains(&krate.name.as_str()) {
            continue;
        }
        let found = check(&krate);
        held.cycles.extend(found.cycles);
        held.unexplained_up.extend(found.unexplained_up);
    }
    held
}

#[test]
fn no_import_cycle_inside_a_crate() {
    let cycles = findings().cycles;
    assert!(
        cycles.is_empty(),
        "import cycles among a crate's top-level modules:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn an_import_up_a_floor_says_why() {
    let up = findings().unexplained_up;
    assert!(
        up.is_empty(),
        "imports up a floor without a reason (move what they need lower, re-order the \
         `mod` declarations, one floor per group of lines as rustfmt sorts each group, or \
         say `// up: <reason>`):\n{}",
        up.join("\n")
    );
}

/// Every crate is read, the pending ones included: what they still hold is listed
/// (`cargo test layers -- --nocapture`) for the lead, who fixes it as they are restructured.
#[test]
fn every_crate_is_read_and_the_pending_ones_are_listed() {
    let all = crates();
    for pending in PENDING {
        assert!(
            all.iter().any(|c| c.name == *pending),
            "{pending} is not a crate"
        );
    }
    let core = all
        .iter()
        .find(|c| c.name == "crates/core")
        .expect("rtvmm-core is read");
    assert!(
        core.floors.iter().any(|f| f == "machine"),
        "{:?}",
        core.floors
    );
    for krate in all.iter().filter(|c| PENDING.contains(&c.name.as_str())) {
        let found = check(krate);
        for m in found.cycles.iter().chain(&found.unexplained_up) {
            println!("pending: {m}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// The checker checked: it finds what it should, and only that.

/// A crate from literal files: `(path under src/, text)`; the floors are `floors`.
fn fake(floors: &[&str], files: &[(&str, &str)]) -> Crate {
    Crate {
        name: "fake".into(),
        root: "fake/src/lib.rs".into(),
        floors: floors.iter().map(|s| s.to_string()).collect(),
        files: files
            .iter()
            .map(|(path, text)| {
                let inner = path.trim_end_matches(".rs");
                let mut parts: Vec<&str> = inner.split('/').collect();
                if parts.last() == Some(&"mod") {
                    parts.pop();
                }
                SourceFile {
                    path: format!("fake/src/{path}"),
                    module: parts[0].to_string(),
                    depth: parts.len(),
                    text: text.to_string(),
                }
            })
            .collect(),
    }
}

#[test]
fn a_cycle_and_an_unexplained_up_edge_are_found_with_file_and_line() {
    let krate = fake(
        &["a", "b", "c"],
        &[
            ("a.rs", "use crate::b::X;\n"),
            (
                "b.rs",
                "// up: b asks c for its clock\nuse crate::c::Clock;\n",
            ),
            ("c/mod.rs", "mod inner;\n"),
            ("c/inner.rs", "fn f() {\n    crate::a::g();\n}\n"),
        ],
    );
    let found = check(&krate);
    assert_eq!(
        found.cycles,
        vec![
            "fake: cycle a -> b -> c -> a\n    a -> b: fake/src/a.rs:1\n    \
             b -> c: fake/src/b.rs:2\n    c -> a: fake/src/c/inner.rs:2"
        ]
    );
    // a -> b points up without a reason; b -> c gives one.
    assert_eq!(found.unexplained_up.len(), 1, "{:?}", found.unexplained_up);
    assert!(found.unexplained_up[0].starts_with("fake/src/a.rs:1: a -> b points up"));
}

#[test]
fn groups_super_chains_and_inline_modules_are_read_and_comments_and_strings_are_not() {
    let text = r##"//! See crate::c::nothing in a comment.
use crate::{self, b::x, c::{y, z}};
use crate::Root;
/* crate::c::block comment */
const S: &str = "crate::c::in a string";
const R: &str = r#"crate::c::in a raw "string""#;
const Q: char = '"';
fn f<'a>(s: &'a str) -> &'a str { s }
use super::sibling;
mod tests {
    use super::*;
    use super::super::c::Test;
}
"##;
    let krate = fake(&["a", "b", "c"], &[("a/x.rs", text)]);
    let got: Vec<(String, usize)> = edges(&krate).into_iter().map(|e| (e.to, e.line)).collect();
    assert_eq!(got, vec![("b".into(), 2), ("c".into(), 2)]);
    // From `src/a.rs` the same `super::` climbs to the root.
    let krate = fake(
        &["a", "b"],
        &[("a.rs", "use super::b;\nmod t {\n    use super::*;\n}\n")],
    );
    let got: Vec<(String, usize)> = edges(&krate).into_iter().map(|e| (e.to, e.line)).collect();
    assert_eq!(got, vec![("b".into(), 1)]);
}

#[test]
fn a_reason_counts_on_the_line_or_the_line_before_and_must_say_something() {
    let krate = fake(
        &["a", "b"],
        &[(
            "a.rs",
            "use crate::b::X; // up: X is b's\n\n// up:\nuse crate::b::Y;\n\n// up: Z too\nuse crate::{\n    b::Z,\n};\n",
        )],
    );
    let up = check(&krate).unexplained_up;
    assert_eq!(up.len(), 1, "{up:?}");
    assert!(up[0].starts_with("fake/src/a.rs:4:"), "{up:?}");
}
