//! Fill: a pattern of one or two 32-bit words repeated over an array's
//! words, which covers every element type (8-bit and 16-bit values are
//! replicated within the word, 64-bit ones take two words).

pub(crate) const WGSL: &str = "\
struct P { n: u32, nx: u32, period: u32, w0: u32, w1: u32 }
var<immediate> p: P;
@group(0) @binding(0) var<storage, read_write> o: array<u32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x + g.y * p.nx;
    if (i >= p.n) { return; }
    o[i] = select(p.w0, p.w1, p.period == 2u && (i & 1u) == 1u);
}
";

/// The words of `value`'s bit pattern repeated to fill whole words: one
/// word, or two for an 8-byte value.
pub(crate) fn pattern(bytes: &[u8]) -> (u32, [u32; 2]) {
    let word = |b: &[u8]| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
    match bytes.len() {
        1 => (1, [u32::from_ne_bytes([bytes[0]; 4]); 2]),
        2 => {
            let w = word(&[bytes[0], bytes[1], bytes[0], bytes[1]]);
            (1, [w, w])
        }
        4 => (1, [word(bytes); 2]),
        _ => (2, [word(&bytes[0..4]), word(&bytes[4..8])]),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn patterns_repeat_the_value_over_words() {
        assert_eq!(super::pattern(&[0xab]), (1, [0xabab_abab; 2]));
        let h = 0x3c00u16.to_ne_bytes();
        assert_eq!(
            super::pattern(&h).1[0].to_ne_bytes(),
            [h[0], h[1], h[0], h[1]]
        );
        let d = 1.5f64.to_ne_bytes();
        let (period, w) = super::pattern(&d);
        assert_eq!(period, 2);
        assert_eq!([w[0].to_ne_bytes(), w[1].to_ne_bytes()].concat(), d);
    }
}
