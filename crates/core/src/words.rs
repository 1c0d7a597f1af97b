//! serde's error messages in words a person reads, for every reader of a file rtvmm takes:
//! scenarios and workloads (TOML), results (JSON). `invalid type: string "x", expected
//! i64` becomes `expected a whole number, found the string "x"`; no Rust type names
//! (`i64`, `struct RawTask`) reach the user. The one place this wording is written.

/// The notation of the file, which names its tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notation {
    /// TOML: a key–value table is "a table".
    Toml,
    /// JSON: it is "an object".
    Json,
}

impl Notation {
    fn table(self) -> &'static str {
        match self {
            Notation::Toml => "a table",
            Notation::Json => "an object",
        }
    }
}

/// serde's `message` in words (see the module note); a message it does not recognise is
/// returned as it is.
pub fn serde_message_in_words(message: &str, notation: Notation) -> String {
    if let Some(rest) = message.strip_prefix("unknown field ") {
        return format!("unknown key {rest}");
    }
    // A struct read from an array: `invalid length 0, expected struct X with 11 elements`.
    if message.starts_with("invalid length ") && message.contains(", expected struct ") {
        return format!("expected {}, found an array", notation.table());
    }
    let Some((found, expected)) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        .and_then(|rest| rest.split_once(", expected "))
    else {
        return message.to_string();
    };
    let expected = match expected {
        "u64" | "u32" | "usize" => "a whole number (0 or more)",
        "i64" | "i32" => "a whole number",
        "f64" | "f32" => "a number",
        "a sequence" => "an array",
        "a boolean" => "true or false",
        e if e.starts_with("struct ") => notation.table(),
        e => e,
    };
    let found = if let Some(v) = found
        .strip_prefix("integer ")
        .or_else(|| found.strip_prefix("floating point "))
    {
        format!("the number {}", v.trim_matches('`'))
    } else if let Some(v) = found.strip_prefix("boolean ") {
        v.trim_matches('`').to_string()
    } else {
        match found {
            "map" => notation.table().to_string(),
            "sequence" => "an array".to_string(),
            "null" | "unit value" => "nothing (null)".to_string(),
            other => format!("the {other}"),
        }
    };
    format!("expected {expected}, found {found}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_messages_read_as_words() {
        let words = |m| serde_message_in_words(m, Notation::Toml);
        assert_eq!(
            words("invalid type: string \"x\", expected i64"),
            "expected a whole number, found the string \"x\""
        );
        assert_eq!(
            words("invalid type: integer `3`, expected a sequence"),
            "expected an array, found the number 3"
        );
        assert_eq!(
            words("invalid type: floating point `0.5`, expected u64"),
            "expected a whole number (0 or more), found the number 0.5"
        );
        assert_eq!(
            words("invalid type: sequence, expected struct RawTask"),
            "expected a table, found an array"
        );
        assert_eq!(
            serde_message_in_words("invalid type: map, expected f64", Notation::Json),
            "expected a number, found an object"
        );
        assert_eq!(
            serde_message_in_words(
                "invalid length 0, expected struct RunResults with 11 elements",
                Notation::Json
            ),
            "expected an object, found an array"
        );
        assert_eq!(
            words("invalid type: boolean `true`, expected a sequence"),
            "expected an array, found true"
        );
        assert_eq!(words("unknown field `x`"), "unknown key `x`");
        assert_eq!(words("something else"), "something else");
    }
}
