use unigpu_kernel_macros::kernel;

#[kernel]
fn tuple_pattern(out: &mut [f32]) {
    for (a, b) in 0..2 {}
}

#[kernel]
fn mut_pattern(out: &mut [f32]) {
    for mut i in 0..2 {}
}

#[kernel]
fn not_a_range(out: &mut [f32]) {
    for i in out {}
}

#[kernel]
fn inclusive(out: &mut [f32]) {
    for i in 0..=2 {}
}

#[kernel]
fn open_range(out: &mut [f32]) {
    for i in 0.. {}
}

#[kernel]
fn float_range(out: &mut [f32]) {
    for i in 0.0..2.0 {}
}

fn main() {}
