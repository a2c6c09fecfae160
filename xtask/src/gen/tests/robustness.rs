//! A bad spec never panics: random mutations of real specs go through the
//! parser and validator.

use rand::Rng;
use rand::seq::SliceRandom;

#[test]
fn mutated_specs_never_panic() {
    let root = crate::generator::repo_root();
    let mut rng = rand::rng();
    let mut rejected = 0;
    for path in crate::generator::discover(&root).expect("specs") {
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        for _ in 0..150 {
            let mutated = match rng.random_range(0..4) {
                0 => {
                    let cut = rng.random_range(0..text.len());
                    let cut = (0..=cut)
                        .rev()
                        .find(|&i| text.is_char_boundary(i))
                        .unwrap_or(0);
                    text[..cut].to_string()
                }
                1 => {
                    let mut l = lines.clone();
                    l.remove(rng.random_range(0..l.len()));
                    l.join("\n")
                }
                2 => {
                    let mut l = lines.clone();
                    l.shuffle(&mut rng);
                    l.join("\n")
                }
                _ => {
                    let junk = [
                        "\t", ":", "- ", "&", "*a", "[", "}", "\"", "|", "\u{0}", "é", "  ",
                    ];
                    let mut s = text.clone();
                    let mut at = rng.random_range(0..s.len());
                    while !s.is_char_boundary(at) {
                        at -= 1;
                    }
                    s.insert_str(at, junk[rng.random_range(0..junk.len())]);
                    s
                }
            };
            if crate::generator::load_str("specs/mutated.yaml", &mutated).is_err() {
                rejected += 1;
            }
        }
    }
    assert!(rejected > 0, "some mutations must be rejected");
}
