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
        self.0.push_str(&format!("d{bits:016x}"));
    }

    /// A string, length-prefixed so no content can be mistaken for structure.
    pub fn string(&mut self, s: &str) {
        self.0.push_str(&format!("s{}:", s.len()));
        self.0.push_str(s);
    }

    pub fn bytes(&mut self, bytes: &[u8]) {
        self.0.push_str(&format!("b{}:", bytes.len()));
        for b in bytes {
            self.0.push_str(&format!("{b:02x}"));
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
        self.0.push_str(&format!("k{}:", key.len()));
        self.0.push_str(key);
    }

    pub fn end_object(&mut self) {
        self.0.push('}');
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
    fn digests_tell_forms_apart() {
        assert_eq!(digest("abc"), digest("abc"));
        assert_ne!(digest("abc"), digest("abd"));
        assert_ne!(digest(""), digest("\0"));
        assert_eq!(digest("x").len(), 33);
    }
}
