//! Text forms of data for people to read.

use std::borrow::Cow;

use sha2::{Digest, Sha256};

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

/// Formats path bytes losslessly: UTF-8 as is; otherwise an escaped form
/// followed by the raw bytes in base64 (SPEC/Record).
pub fn lossless(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => {
            let escaped: String = bytes.escape_ascii().to_string();
            format!("{escaped} (base64:{})", base64(bytes))
        }
    }
}

/// Standard base64 with padding (RFC 4648 §4).
fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Returns the lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Formats bytes as lowercase hex: two digits per byte, by table (one
/// `format!` per byte cost 32 allocations per sha256, on every audit line).
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    s
}

/// Returns the current time as RFC 3339 UTC with seconds.
pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_two_lowercase_digits_a_byte() {
        assert_eq!(hex(&[]), "");
        assert_eq!(hex(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
        // FIPS 180-2, appendix B.1: SHA-256 of "abc".
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

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

    #[test]
    fn lossless_paths() {
        assert_eq!(lossless(b"a b"), "a b");
        assert_eq!(lossless(b"\xffx"), "\\xffx (base64:/3g=)");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(b"fo"), "Zm8=");
    }
}
