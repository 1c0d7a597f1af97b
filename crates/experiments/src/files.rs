//! Output files that never destroy anything: every file `rtvmm` writes goes through here.
//!
//! - **Checked before anything runs.** [`check_outputs`] refuses an output that is one of
//!   the command's inputs (the same file by any path: `./s.toml`, a symlink, a hard link),
//!   two outputs that are one file, a directory, a missing or unwritable directory, and a
//!   read-only file; [`prepare_dir`] creates an output directory and proves it writable.
//!   The binary reports these as bad usage (exit 2) before it simulates anything.
//! - **Written atomically.** An [`AtomicFile`] is a temporary file beside its target (same
//!   directory, so the same file system), renamed over the target only when every byte is
//!   written and synced. A full disk, an error or a kill leaves the previous file or none,
//!   never a truncated one. [`commit_all`] finishes several files first and renames them
//!   all at the end, so one command's outputs appear together or not at all (as far as a
//!   file system allows: the renames themselves are one per file).
//! - A path that exists and is not a regular file (`/dev/null`, `/dev/stdout`, a pipe) is
//!   written directly: it cannot be replaced, and it is never "the same file twice".
//!
//! Errors are typed: [`OutputError`] (an unusable path: the user's to fix) and
//! [`WriteError`] (writing failed: the disk, not the user).

use std::fs::{self, File, Permissions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

/// An output path that cannot be used, found before anything runs.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{output}: this output is the input file {input}; choose another output path")]
    SameAsInput { output: PathBuf, input: PathBuf },
    #[error(
        "{second}: this output is the same file as the output {first}; give each output its own path"
    )]
    GivenTwice { first: PathBuf, second: PathBuf },
    #[error("{path}: is a directory, not a file")]
    IsDirectory { path: PathBuf },
    #[error("{path}: the directory {dir} does not exist")]
    NoDirectory { path: PathBuf, dir: PathBuf },
    #[error("{path}: exists and is not a directory")]
    NotADirectory { path: PathBuf },
    /// `error` is not a `source()`: the message already says it (a reporter walking the
    /// chain would print it twice).
    #[error("{path}: the directory {dir} is not writable ({error})")]
    NotWritable {
        path: PathBuf,
        dir: PathBuf,
        error: io::Error,
    },
    #[error("{path}: the file is read-only")]
    ReadOnly { path: PathBuf },
    #[error("cannot create the output directory {dir}: {error}")]
    CannotCreateDir { dir: PathBuf, error: io::Error },
    #[error("the output directory {dir} is not writable ({error})")]
    DirNotWritable { dir: PathBuf, error: io::Error },
}

/// The OS's own message, without the temporary path `tempfile` adds to its errors (it
/// wraps the OS error in one of its own, which names the probe file).
fn plain(error: io::Error) -> io::Error {
    let code = error.raw_os_error().or_else(|| {
        let inner = error.get_ref()?;
        let os = inner
            .downcast_ref::<io::Error>()
            .or_else(|| inner.source()?.downcast_ref::<io::Error>())?;
        os.raw_os_error()
    });
    match code {
        Some(code) => io::Error::from_raw_os_error(code),
        None => io::Error::from(error.kind()),
    }
}

/// Writing an output failed (a full disk, an I/O error): the previous file, if any, is
/// still there.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {error}")]
pub struct WriteError {
    pub path: PathBuf,
    pub error: io::Error,
}

impl WriteError {
    fn new(path: &Path, error: io::Error) -> WriteError {
        WriteError {
            path: path.to_path_buf(),
            error,
        }
    }
}

/// What decides whether two paths are the same file.
#[derive(Debug, PartialEq, Eq)]
enum FileId {
    /// An existing file: its device and inode (or canonical path off Unix).
    Existing(u64, u64, PathBuf),
    /// A file still to be made: its canonical directory and name.
    New(PathBuf),
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

#[cfg(unix)]
fn inode(meta: &fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn inode(_meta: &fs::Metadata) -> (u64, u64) {
    (0, 0)
}

/// The identity of `path`, or `None` for a path that exists and is not a regular file
/// (a device or a pipe) or cannot be resolved.
fn file_id(path: &Path) -> Option<FileId> {
    match fs::metadata(path) {
        Ok(meta) if meta.is_file() => {
            let (dev, ino) = inode(&meta);
            let canonical = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
            // Off Unix the canonical path alone decides.
            let canonical = if cfg!(unix) {
                PathBuf::new()
            } else {
                canonical
            };
            Some(FileId::Existing(dev, ino, canonical))
        }
        Ok(_) => None,
        Err(_) => {
            let dir = fs::canonicalize(parent_dir(path)).ok()?;
            Some(FileId::New(dir.join(path.file_name()?)))
        }
    }
}

/// Whether `a` and `b` are one file (by any path); `false` when either does not exist.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (file_id(a), file_id(b)) {
        (Some(x @ FileId::Existing(..)), Some(y)) => x == y,
        _ => false,
    }
}

/// Checks the outputs of one command against its inputs and each other, and that each
/// can be written, before anything runs. Creates nothing (a probe file in each output's
/// directory is made and removed at once).
pub fn check_outputs(inputs: &[&Path], outputs: &[&Path]) -> Result<(), OutputError> {
    let input_ids: Vec<(&Path, Option<FileId>)> = inputs.iter().map(|p| (*p, file_id(p))).collect();
    let mut seen: Vec<(&Path, FileId)> = Vec::new();
    for &path in outputs {
        check_output(path)?;
        let Some(id) = file_id(path) else {
            continue;
        };
        if let Some((input, _)) = input_ids.iter().find(|(_, i)| i.as_ref() == Some(&id)) {
            return Err(OutputError::SameAsInput {
                output: path.to_path_buf(),
                input: input.to_path_buf(),
            });
        }
        if let Some((first, _)) = seen.iter().find(|(_, s)| *s == id) {
            return Err(OutputError::GivenTwice {
                first: first.to_path_buf(),
                second: path.to_path_buf(),
            });
        }
        seen.push((path, id));
    }
    Ok(())
}

/// One output path on its own: a file (not a directory) in a directory that exists and
/// takes new files, and not read-only.
fn check_output(path: &Path) -> Result<(), OutputError> {
    let meta = fs::metadata(path).ok();
    if meta.as_ref().is_some_and(|m| m.is_dir()) || path.file_name().is_none() {
        return Err(OutputError::IsDirectory {
            path: path.to_path_buf(),
        });
    }
    if meta.as_ref().is_some_and(|m| !m.is_file()) {
        return Ok(()); // a device or a pipe: written directly
    }
    if meta.as_ref().is_some_and(|m| m.permissions().readonly()) {
        return Err(OutputError::ReadOnly {
            path: path.to_path_buf(),
        });
    }
    let dir = parent_dir(&resolve(path));
    if !dir.is_dir() {
        return Err(if dir.exists() {
            OutputError::NotADirectory { path: dir }
        } else {
            OutputError::NoDirectory {
                path: path.to_path_buf(),
                dir,
            }
        });
    }
    probe(&dir).map_err(|error| OutputError::NotWritable {
        path: path.to_path_buf(),
        dir,
        error,
    })
}

/// Proves that `dir` takes new files by making one and removing it.
fn probe(dir: &Path) -> io::Result<()> {
    tempfile::Builder::new()
        .prefix(".rtvmm-probe-")
        .tempfile_in(dir)
        .map(drop)
        .map_err(plain)
}

/// Removes the file at `path` if there is one (a stale manifest that would vouch for
/// files a new run did not write).
pub fn remove_if_present(path: &Path) -> Result<(), WriteError> {
    match fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(WriteError {
            path: path.to_path_buf(),
            error,
        }),
        _ => Ok(()),
    }
}

/// Creates the output directory `dir` (and its parents) and proves it writable.
pub fn prepare_dir(dir: &Path) -> Result<(), OutputError> {
    if dir.exists() && !dir.is_dir() {
        return Err(OutputError::NotADirectory {
            path: dir.to_path_buf(),
        });
    }
    fs::create_dir_all(dir).map_err(|error| OutputError::CannotCreateDir {
        dir: dir.to_path_buf(),
        error,
    })?;
    probe(dir).map_err(|error| OutputError::DirNotWritable {
        dir: dir.to_path_buf(),
        error,
    })
}

/// The file a write to `path` lands in: a symlink's target, so that the link stays.
fn resolve(path: &Path) -> PathBuf {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

enum Sink {
    /// A temporary file beside the target, renamed over it by `commit`; written through
    /// a second handle (`NamedTempFile`'s own adds its temporary path to every error).
    Temp(NamedTempFile, BufWriter<File>),
    /// A device or a pipe, written as it comes.
    Direct(BufWriter<File>),
}

/// An output file being written: nothing is visible at its path until [`commit`].
///
/// [`commit`]: AtomicFile::commit
pub struct AtomicFile {
    /// The path as given, for messages.
    path: PathBuf,
    /// The file that receives it (a symlink resolved).
    target: PathBuf,
    sink: Sink,
    /// Flushed and synced: only the rename remains.
    finished: bool,
}

impl AtomicFile {
    /// Starts writing `path`: a temporary file in the same directory (with the existing
    /// file's permissions, or the usual ones for a new file).
    pub fn create(path: &Path) -> Result<AtomicFile, WriteError> {
        let err = |e| WriteError::new(path, e);
        let target = resolve(path);
        let existing = fs::metadata(&target).ok();
        if existing
            .as_ref()
            .is_some_and(|m| !m.is_file() && !m.is_dir())
        {
            let file = File::create(&target).map_err(err)?;
            return Ok(AtomicFile {
                path: path.to_path_buf(),
                target,
                sink: Sink::Direct(BufWriter::new(file)),
                finished: false,
            });
        }
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let prefix = format!(".{name}.");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // What `File::create` gives a new file (the umask applies).
            builder.permissions(Permissions::from_mode(0o666));
        }
        let temp = builder
            .tempfile_in(parent_dir(&target))
            .map_err(|e| err(plain(e)))?;
        if let Some(meta) = existing {
            set_permissions(temp.as_file(), meta.permissions()).map_err(err)?;
        }
        let handle = temp.as_file().try_clone().map_err(err)?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            target,
            sink: Sink::Temp(temp, BufWriter::new(handle)),
            finished: false,
        })
    }

    /// The path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes and syncs the bytes, so that only the rename remains (a full disk shows
    /// here at the latest). Nothing is visible at the path yet.
    pub fn finish(&mut self) -> Result<(), WriteError> {
        if self.finished {
            return Ok(());
        }
        let err = |e| WriteError::new(&self.path, e);
        match &mut self.sink {
            Sink::Temp(_, w) => {
                w.flush().map_err(err)?;
                w.get_ref().sync_all().map_err(err)?;
            }
            Sink::Direct(w) => w.flush().map_err(err)?,
        }
        self.finished = true;
        Ok(())
    }

    /// Finishes the file and puts it in place of the previous one.
    pub fn commit(mut self) -> Result<(), WriteError> {
        self.finish()?;
        self.rename()
    }

    fn rename(self) -> Result<(), WriteError> {
        match self.sink {
            Sink::Direct(_) => Ok(()),
            Sink::Temp(temp, w) => {
                drop(
                    w.into_inner()
                        .map_err(|e| WriteError::new(&self.path, e.into_error()))?,
                );
                temp.persist(&self.target)
                    .map(drop)
                    .map_err(|e| WriteError::new(&self.path, e.error))
            }
        }
    }
}

fn set_permissions(file: &File, permissions: Permissions) -> io::Result<()> {
    file.set_permissions(permissions)
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.sink {
            Sink::Temp(_, w) => w.write(buf),
            Sink::Direct(w) => w.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.sink {
            Sink::Temp(_, w) => w.write_all(buf),
            Sink::Direct(w) => w.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Temp(_, w) => w.flush(),
            Sink::Direct(w) => w.flush(),
        }
    }
}

/// Finishes every file, then renames them all: if any fails to finish (a full disk),
/// none replaces its previous version.
pub fn commit_all(files: Vec<AtomicFile>) -> Result<(), WriteError> {
    let mut files = files;
    for f in &mut files {
        f.finish()?;
    }
    for f in files {
        f.rename()?;
    }
    Ok(())
}

/// Writes `bytes` to `path` atomically.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes)
        .map_err(|e| WriteError::new(path, e))?;
    file.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        fs::write(&path, "old").unwrap();
        let mut f = AtomicFile::create(&path).unwrap();
        f.write_all(b"new").unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "old",
            "not visible before commit"
        );
        f.commit().unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary left");
    }

    #[test]
    fn an_abandoned_write_leaves_the_previous_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        fs::write(&path, "previous").unwrap();
        {
            let mut f = AtomicFile::create(&path).unwrap();
            f.write_all(b"half").unwrap();
        }
        assert_eq!(fs::read_to_string(&path).unwrap(), "previous");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_written_through_and_permissions_are_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.txt");
        fs::write(&real, "a").unwrap();
        fs::set_permissions(&real, Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_file(&link, b"b").unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&real).unwrap(), "b");
        let mode = fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
    }

    #[cfg(unix)]
    #[test]
    fn the_same_file_by_another_path_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("s.toml");
        fs::write(&input, "x").unwrap();
        let dotted = dir.path().join(".").join("s.toml");
        let link = dir.path().join("l.toml");
        std::os::unix::fs::symlink(&input, &link).unwrap();
        let hard = dir.path().join("h.toml");
        fs::hard_link(&input, &hard).unwrap();
        for out in [&input, &dotted, &link, &hard] {
            let err = check_outputs(&[&input], &[out]).unwrap_err();
            assert!(matches!(err, OutputError::SameAsInput { .. }), "{err}");
        }
        let a = dir.path().join("new.json");
        let b = dir.path().join("sub").join("..").join("new.json");
        fs::create_dir(dir.path().join("sub")).unwrap();
        let err = check_outputs(&[&input], &[&a, &b]).unwrap_err();
        assert!(matches!(err, OutputError::GivenTwice { .. }), "{err}");
        check_outputs(&[&input], &[&a, &dir.path().join("other.json")]).unwrap();
        // Devices are written directly and may be named twice.
        let null = Path::new("/dev/null");
        check_outputs(&[&input], &[null, null]).unwrap();
    }

    #[test]
    fn unusable_paths_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        fs::write(&file, "x").unwrap();
        let cases = [
            (dir.path().to_path_buf(), "is a directory"),
            (dir.path().join("no/such/out.json"), "does not exist"),
            (file.join("out.json"), "is not a directory"),
        ];
        for (path, needle) in cases {
            let err = check_outputs(&[], &[&path]).unwrap_err().to_string();
            assert!(err.contains(needle), "{err}");
        }
        assert!(prepare_dir(&file.join("sub")).is_err());
        prepare_dir(&dir.path().join("a/b")).unwrap();
        assert!(dir.path().join("a/b").is_dir());
    }
}
