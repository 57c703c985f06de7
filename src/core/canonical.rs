//! A canonical text form of plain data (`null`, `undefined`, booleans, numbers, strings, byte
//! arrays, arrays and plain objects), equal for two values exactly when the SDK's `MemorySession`
//! calls them structurally equal: numbers compare as `Object.is` does (`NaN` equals `NaN`, `0`
//! differs from `-0`), object keys in any order, a key holding `undefined` counts. The backend
//! walks a JS value and feeds it here; history transactions compare and remember these forms.

/// Builds the canonical form of one value, event by event.
#[derive(Debug, Default, Clone)]
pub struct Canonical(String);

impl Canonical {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn finish(self) -> String {
        self.0
    }

    pub fn null(&mut self) {
        self.0.push('n');
    }

    pub fn undefined(&mut self) {
        self.0.push('u');
    }

    pub fn bool(&mut self, b: bool) {
        self.0.push(if b { 't' } else { 'f' });
    }

    /// A number by its bits, so `-0` and `0` differ; every `NaN` is the same.
    pub fn number(&mut self, n: f64) {
        let bits = if n.is_nan() {
            f64::NAN.to_bits()
        } else {
            n.to_bits()
        };
        self.0.push('d');
        push_hex(&mut self.0, bits, 16);
    }

    /// A string, length-prefixed so no content can be mistaken for structure.
    pub fn string(&mut self, s: &str) {
        self.length('s', s.len());
        self.0.push_str(s);
    }

    /// A string that is not well-formed UTF-16 (it holds a lone surrogate: half an emoji, as a
    /// text sliced by UTF-16 units holds), by its JSON text (`JSON.stringify` writes a lone
    /// surrogate as its escape, `"\ud83d"`, so two such strings have one text only when they
    /// are equal): a tag of its own, so it equals no other string's form, and the forms of
    /// well-formed strings stay what they were.
    pub fn ill_formed(&mut self, json: &str) {
        self.length('w', json.len());
        self.0.push_str(json);
    }

    pub fn bytes(&mut self, bytes: &[u8]) {
        self.length('b', bytes.len());
        for b in bytes {
            push_hex(&mut self.0, u64::from(*b), 2);
        }
    }

    pub fn begin_array(&mut self) {
        self.0.push('[');
    }

    pub fn end_array(&mut self) {
        self.0.push(']');
    }

    pub fn begin_object(&mut self) {
        self.0.push('{');
    }

    /// A key of an object; the caller gives the keys sorted (see [`sort_keys`]).
    pub fn key(&mut self, key: &str) {
        self.length('k', key.len());
        self.0.push_str(key);
    }

    pub fn end_object(&mut self) {
        self.0.push('}');
    }

    /// `tag`, `n` in decimal, `:`: the prefix of a string, a key or bytes. Written digit by
    /// digit ([`push_decimal`]): no `format!` (and no allocation) per value.
    fn length(&mut self, tag: char, n: usize) {
        self.0.push(tag);
        push_decimal(&mut self.0, n as u64);
        self.0.push(':');
    }
}

/// Writes `n` in decimal to `out` (no `format!`, no allocation).
pub fn push_decimal(out: &mut String, n: u64) {
    let mut digits = [0u8; 20];
    let (mut n, mut at) = (n, digits.len());
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
}

/// Writes the `width` lowest hex digits of `n` to `out`, lower-case (no `format!`, no allocation).
pub fn push_hex(out: &mut String, n: u64, width: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for i in (0..width).rev() {
        let digit = (n >> (4 * i)) & 0xf;
        out.push(char::from(HEX[digit as usize]));
    }
}

/// Object keys in canonical order.
pub fn sort_keys(keys: &mut [String]) {
    super::sort::sort_by(keys, |a, b| a.cmp(b));
}

/// A 128-bit digest of a canonical form (two FNV-1a hashes with different offsets), as hex: enough
/// to tell two transactions apart without keeping their items.
pub fn digest(text: &str) -> String {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut a: u64 = 0xcbf2_9ce4_8422_2325;
    let mut b: u64 = 0x6c62_272e_07bb_0142;
    for byte in text.bytes() {
        a = (a ^ byte as u64).wrapping_mul(PRIME);
        b = (b ^ byte as u64).wrapping_mul(PRIME).rotate_left(5);
    }
    format!("{a:016x}{b:016x}{:x}", text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(n: f64) -> String {
        let mut c = Canonical::new();
        c.number(n);
        c.finish()
    }

    #[test]
    fn numbers_compare_as_object_is() {
        assert_eq!(number(f64::NAN), number(-f64::NAN));
        assert_ne!(number(0.0), number(-0.0));
        assert_eq!(number(1.5), number(1.5));
    }

    #[test]
    fn strings_cannot_pose_as_structure() {
        let form = |parts: &[&str]| {
            let mut c = Canonical::new();
            c.begin_array();
            for p in parts {
                c.string(p);
            }
            c.end_array();
            c.finish()
        };
        assert_ne!(form(&["a", "b"]), form(&["as1:b"]));
        assert_ne!(form(&["ab"]), form(&["a", "b"]));
    }

    #[test]
    fn a_string_with_a_lone_surrogate_has_a_form_of_its_own() {
        let ill_formed = |json: &str| {
            let mut c = Canonical::new();
            c.ill_formed(json);
            c.finish()
        };
        let string = |s: &str| {
            let mut c = Canonical::new();
            c.string(s);
            c.finish()
        };
        assert_eq!(ill_formed(r#""a\ud83d""#), r#"w9:"a\ud83d""#);
        assert_ne!(ill_formed(r#""a\ud83d""#), string(r#""a\ud83d""#));
        assert_ne!(ill_formed(r#""a\ud83d""#), string("a\u{FFFD}"));
    }

    #[test]
    fn the_text_of_a_form_stays_as_stored_logs_remember_it() {
        // Digests of these forms are kept in operation logs: the text must never change.
        let mut c = Canonical::new();
        c.begin_object();
        c.key("abcdefghijkl");
        c.string("héllo");
        c.key("n");
        c.number(1.5);
        c.key("z");
        c.bytes(&[0, 255, 16]);
        c.end_object();
        assert_eq!(
            c.finish(),
            "{k12:abcdefghijkls6:héllok1:nd3ff8000000000000k1:zb3:00ff10}"
        );
        assert_eq!(number(0.0), "d0000000000000000");
        let mut long = Canonical::new();
        long.string(&"x".repeat(1234));
        assert!(long.finish().starts_with("s1234:x"));
    }

    #[test]
    fn digests_tell_forms_apart() {
        assert_eq!(digest("abc"), digest("abc"));
        assert_ne!(digest("abc"), digest("abd"));
        assert_ne!(digest(""), digest("\0"));
        assert_eq!(digest("x").len(), 33);
    }
}
