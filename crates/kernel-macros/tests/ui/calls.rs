use unigpu_kernel_macros::kernel;

#[kernel]
fn call_non_path(out: &mut [f32]) {
    let v = (f)(1);
}

#[kernel]
fn builtin_whole(out: &mut [f32]) {
    let v = global_id();
}

#[kernel]
fn fma_arity(out: &mut [f32]) {
    out[0] = fma(out[0], out[1]);
}

#[kernel]
fn fma_on_integers(out: &mut [i32]) {
    out[0] = fma(out[0], out[1], out[2]);
}

#[kernel]
fn pow_mixed(out: &mut [f32]) {
    out[0] = pow(out[0], 2.0f64);
}

#[kernel]
fn log_without_a_base(out: &mut [f32]) {
    out[0] = out[1].log();
}

#[kernel]
fn round_of_an_integer(out: &mut [u32]) {
    out[0] = out[1].round();
}

#[kernel]
fn barrier_call(out: &mut [f32]) {
    let b = barrier();
}

#[kernel]
fn helper_call(out: &mut [f32]) {
    out[0] = helper(out[1]);
}

#[kernel]
fn rsqrt_arity(out: &mut [f32]) {
    out[0] = rsqrt(out[1], out[2]);
}

#[kernel]
fn turbofish(out: &mut [f32]) {
    out[0] = out[1].sqrt::<f32>();
}

#[kernel]
fn len_args(out: &mut [f32]) {
    let n = out.len(1);
}

#[kernel]
fn mul_add_arity(out: &mut [f32]) {
    out[0] = out[1].mul_add(out[2]);
}

#[kernel]
fn unknown_method(out: &mut [f32]) {
    out[0] = out[1].cbrt();
}

#[kernel]
fn method_arity(out: &mut [f32]) {
    out[0] = out[1].min(1.0, 2.0);
}

#[kernel]
fn float_only(out: &mut [u32]) {
    out[0] = out[1].sqrt();
}

#[kernel]
fn number_only(out: &mut [u32]) {
    let b = true.min(false);
}

#[kernel]
fn abs_unsigned(out: &mut [u32]) {
    out[0] = out[1].abs();
}

#[kernel]
fn powi_float_exponent(out: &mut [f32]) {
    out[0] = out[1].powi(2.0);
}

fn main() {}

#[kernel]
fn to_bits_of_f64(x: &[f64], out: &mut [u32]) {
    out[0] = x[0].to_bits() as u32;
}

#[kernel]
fn to_bits_of_an_integer(x: &[i32], out: &mut [u32]) {
    out[0] = x[0].to_bits();
}

#[kernel]
fn from_bits_of_f64(x: &[f64], out: &mut [f64]) {
    out[0] = f64::from_bits(3u64);
}

#[kernel]
fn from_bits_of_an_i32(x: &[i32], out: &mut [f32]) {
    out[0] = f32::from_bits(x[0]);
}
