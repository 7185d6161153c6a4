//! Text forms of data for people to read.

use std::borrow::Cow;

/// Escapes the control characters of `s` for human output (SPEC "Bad input
/// and faults": control characters in names are escaped in human output,
/// JSON keeps them exact): `\n`, `\r` and `\t` by name, every other C0
/// control, DEL and C1 control (U+0080 to U+009F, which some terminals
/// obey as escapes) as `\x1b` / `\u{85}`. Anything else, backslashes
/// included, is left as it is, so ordinary text reads unchanged; a name
/// cannot forge a line or move the cursor.
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && c.is_control() => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_the_rest_is_kept() {
        assert!(matches!(
            escape_controls("plain `a b` ü \\n"),
            Cow::Borrowed(_)
        ));
        assert_eq!(escape_controls("a\nb"), "a\\nb");
        assert_eq!(escape_controls("\r\t"), "\\r\\t");
        assert_eq!(escape_controls("\x1b[31mred"), "\\x1b[31mred");
        assert_eq!(escape_controls("\0\x7f"), "\\x00\\x7f");
        assert_eq!(escape_controls("x\u{85}y\u{9b}"), "x\\u{85}y\\u{9b}");
    }
}
