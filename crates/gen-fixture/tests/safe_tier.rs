//! The fixture library through the generated safe tier (tier 3 over tier 1):
//! random inputs, every element checked against a Rust reference.

use rand::Rng;
use unigpu_gen_fixture as fx;

fn random_name(rng: &mut impl Rng) -> String {
    const ALPHABET: &[char] = &['a', 'b', 'z', 'Q', '0', '_', ' ', 'é', 'ß', '日'];
    (0..rng.random_range(1..24))
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())])
        .collect()
}

fn fnv1a(data: &[u8]) -> u32 {
    data.iter().fold(2166136261u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(16777619)
    })
}

#[test]
fn a_counter_keeps_state_and_history() {
    let mut rng = rand::rng();
    for _ in 0..20 {
        let start = rng.random_range(-1_000_000i64..1_000_000);
        let name = random_name(&mut rng);
        let mut c = fx::make_counter(&name, start).expect("make_counter");
        assert_eq!(c.name().expect("name"), name);
        let deltas: Vec<i64> = (0..rng.random_range(0..300))
            .map(|_| rng.random())
            .collect();
        let split = rng.random_range(0..=deltas.len());
        let mut want = start;
        let mut history = vec![start];
        for &d in &deltas[..split] {
            c.add(d).expect("add");
            want = want.wrapping_add(d);
            history.push(want);
            assert_eq!(c.value().expect("value"), want);
        }
        let after = c.add_all(&deltas[split..]).expect("add_all");
        for &d in &deltas[split..] {
            want = want.wrapping_add(d);
            history.push(want);
        }
        assert_eq!(after, want);
        assert_eq!(c.is_positive().expect("is_positive"), want > 0);

        let got = c.history().expect("history");
        assert_eq!(got.len(), history.len());
        for (i, (g, w)) in got.iter().zip(&history).enumerate() {
            assert_eq!(g, w, "history[{i}]");
        }
        let cap = rng.random_range(0..history.len() + 5);
        let mut buf = vec![i64::MIN; cap];
        let copied = c.copy_history(&mut buf).expect("copy_history");
        assert_eq!(copied, cap.min(history.len()));
        let tail = &history[history.len() - copied..];
        for i in 0..copied {
            assert_eq!(buf[i], tail[i], "copy_history[{i}]");
        }
        for (i, &v) in buf.iter().enumerate().skip(copied) {
            assert_eq!(v, i64::MIN, "element {i} beyond the copy is untouched");
        }
    }
}

#[test]
fn exceptions_become_errors_and_leave_state_alone() {
    let mut rng = rand::rng();
    let start = rng.random_range(1i64..1_000_000);
    let mut c = fx::make_counter("exc", start).expect("make_counter");

    let e = c.divide(0).expect_err("division by zero throws");
    assert_eq!(e.context(), "Counter::divide");
    assert_eq!(e.message(), "Counter::divide_by: division by zero");
    assert_eq!(
        e.to_string(),
        "fixture: Counter::divide: Counter::divide_by: division by zero"
    );
    assert_eq!(
        c.value().expect("value"),
        start,
        "a failed call changes nothing"
    );

    let d = rng.random_range(1i64..100) * if rng.random() { 1 } else { -1 };
    assert_eq!(c.divide(d).expect("divide"), start / d);

    let e = c.rename("").expect_err("empty name throws");
    assert!(e.message().contains("empty name"), "{e}");
    assert_eq!(c.name().expect("name"), "exc");
    c.rename("renamed").expect("rename");
    assert_eq!(c.name().expect("name"), "renamed");

    let e = c.mean_offset(&[]).expect_err("no samples");
    assert!(e.message().contains("no samples"), "{e}");

    let e = fx::strict_sqrt(-rng.random_range(0.5f64..100.0)).expect_err("throws an int");
    assert!(
        e.message().contains("not derived from std::exception"),
        "{e}"
    );
    assert!(e.message().contains("fixture::strict_sqrt"), "{e}");
    let x = rng.random_range(0.0f64..1e6);
    assert_eq!(fx::strict_sqrt(x).expect("sqrt"), x.sqrt());

    let e = fx::scale_into(&[1.0, 2.0], &mut [0.0], 2.0).expect_err("length mismatch");
    assert!(e.message().contains("differ in length"), "{e}");
}

#[test]
fn strings_in_and_out() {
    let mut rng = rand::rng();
    for _ in 0..50 {
        let s = random_name(&mut rng);
        assert_eq!(fx::upper(&s).expect("upper"), s.to_ascii_uppercase());
    }
    assert!(fx::version().expect("version").starts_with("fixture "));
}

#[test]
fn slices_in_and_out() {
    let mut rng = rand::rng();
    for _ in 0..20 {
        let bytes: Vec<u8> = (0..rng.random_range(0..5000))
            .map(|_| rng.random())
            .collect();
        assert_eq!(fx::checksum(&bytes).expect("checksum"), fnv1a(&bytes));

        let src: Vec<f32> = (0..rng.random_range(0..5000))
            .map(|_| rng.random_range(-1e4f32..1e4))
            .collect();
        let factor = rng.random_range(-10f32..10.0);
        let mut dst = vec![f32::NAN; src.len()];
        fx::scale_into(&src, &mut dst, factor).expect("scale_into");
        for i in 0..src.len() {
            assert_eq!(dst[i].to_bits(), (src[i] * factor).to_bits(), "dst[{i}]");
        }

        let c = fx::make_counter("m", rng.random_range(-100..100)).expect("make");
        let samples: Vec<f64> = (0..rng.random_range(1..1000))
            .map(|_| rng.random_range(-1e3..1e3))
            .collect();
        let sum: f64 = samples.iter().fold(0.0, |a, b| a + b);
        let want = sum / samples.len() as f64 + c.value().expect("value") as f64;
        assert_eq!(
            c.mean_offset(&samples).expect("mean").to_bits(),
            want.to_bits()
        );

        let byte: u8 = rng.random();
        let count = rng.random_range(0..3000);
        let rep = fx::repeat_byte(byte, count).expect("repeat_byte");
        assert_eq!(rep.len(), count);
        assert!(rep.iter().all(|&b| b == byte));
    }
}

#[test]
fn handles_by_reference_and_owned() {
    let mut rng = rand::rng();
    let (x, y) = (
        rng.random_range(-1_000_000i64..1_000_000),
        rng.random_range(-1_000_000i64..1_000_000),
    );
    let mut a = fx::make_counter("a", x).expect("a");
    let mut b = fx::make_counter("b", y).expect("b");
    // Bug 1 of the earlier generator: handles reach the lambda as the objects.
    assert_eq!(fx::sum_values(&a, &b).expect("sum"), x + y);

    let mut copy = a.renamed_copy("copy").expect("renamed_copy");
    assert_eq!(copy.name().expect("name"), "copy");
    assert_eq!(copy.value().expect("value"), x);
    copy.add(5).expect("add");
    assert_eq!(a.value().expect("value"), x, "the copy is independent");

    a.absorb(&mut b).expect("absorb");
    assert_eq!(a.value().expect("value"), x + y);
    assert_eq!(b.value().expect("value"), 0);
    assert_eq!(b.history().expect("history"), vec![y, 0]);
    drop(copy);
    drop(b);
    assert_eq!(a.value().expect("value"), x + y);
    assert!(format!("{a:?}").starts_with("Counter"));
}

#[test]
fn every_scalar_type_crosses() {
    let mut rng = rand::rng();
    for _ in 0..200 {
        let (a, b, c, d, e, f, g): (i8, i16, i32, u8, u16, u32, u64) = (
            rng.random(),
            rng.random(),
            rng.random(),
            rng.random(),
            rng.random(),
            rng.random(),
            rng.random(),
        );
        let h: f32 = rng.random_range(-1e6..1e6);
        let flag: bool = rng.random();
        let want = f64::from(a)
            + f64::from(b)
            + f64::from(c)
            + f64::from(d)
            + f64::from(e)
            + f64::from(f)
            + g as f64
            + f64::from(h)
            + if flag { 1.0 } else { 0.0 };
        let got = fx::mix(a, b, c, d, e, f, g, h, flag).expect("mix");
        assert_eq!(
            got.to_bits(),
            want.to_bits(),
            "mix({a}, {b}, {c}, {d}, {e}, {f}, {g}, {h}, {flag})"
        );
    }
}
