use unigpu_kernel_macros::kernel;

#[kernel]
fn int_for_float(out: &mut [f32]) {
    out[0] = 1;
}

#[kernel]
fn int_suffix(out: &mut [f32]) {
    let v = 1u8;
}

#[kernel]
fn int_range(out: &mut [f32]) {
    let v = 300000000000i32;
}

#[kernel]
fn float_for_int(out: &mut [u32]) {
    out[0] = 1.5;
}

#[kernel]
fn float_suffix(out: &mut [f32]) {
    let v = 1.5f16;
}

#[kernel]
fn f32_range(out: &mut [f32]) {
    out[0] = 1e39f32;
}

#[kernel]
fn f64_range(out: &mut [f32]) {
    let v = 1e309f64;
}

#[kernel]
fn string(out: &mut [f32]) {
    let v = "text";
}

fn main() {}
