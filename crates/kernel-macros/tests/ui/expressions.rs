use unigpu_kernel_macros::kernel;

#[kernel]
fn index_not_array(out: &mut [f32]) {
    let a = global_id().x;
    out[0] = (out)[a as usize] + [1.0f32][0];
}

#[kernel]
fn index_scalar(n: f32, out: &mut [f32]) {
    out[0] = n[0];
}

#[kernel]
fn index_local(out: &mut [f32]) {
    let v = 1.0f32;
    out[0] = v[0];
}

#[kernel]
fn index_unknown(out: &mut [f32]) {
    out[0] = w[0];
}

#[kernel]
fn index_type(out: &mut [f32]) {
    out[0u32] = 1.0;
}

#[kernel]
fn bool_rem(out: &mut [u32], a: bool, b: bool) {
    let c = a % b;
}

#[kernel]
fn float_shift(out: &mut [f32]) {
    out[0] = out[1] << 2;
}

#[kernel]
fn mismatch(out: &mut [f32], n: u32) {
    out[0] = out[1] + n;
}

#[kernel]
fn literal_mismatch(out: &mut [f32]) {
    let x = 1.0;
    out[0] = out[1] + x;
}

#[kernel]
fn int_literal_mismatch(out: &mut [u64]) {
    let x = 1;
    out[0] = out[1] + x;
}

#[kernel]
fn bool_add(out: &mut [f32]) {
    let b = true + false;
}

#[kernel]
fn path(out: &mut [f32]) {
    out[0] = std::f32::consts::PI;
}

#[kernel]
fn array_value(out: &mut [f32]) {
    let a = out;
}

#[kernel]
fn unknown(out: &mut [f32]) {
    out[0] = y;
}

#[kernel]
fn assign_value(out: &mut [f32]) {
    let mut a = 1;
    let b = a += 1;
}

#[kernel]
fn negate_unsigned(out: &mut [u32]) {
    out[0] = -out[1];
}

#[kernel]
fn not_float(out: &mut [f32]) {
    out[0] = !out[1];
}

#[kernel]
fn deref(out: &mut [f32]) {
    out[0] = *out[1];
}

#[kernel]
fn cast_vec(out: &mut [f32]) {
    out[0] = 1 as Vec<f32>;
}

#[kernel]
fn cast_to_bool(out: &mut [f32]) {
    let b = 1 as bool;
}

#[kernel]
fn bool_to_float(out: &mut [f32]) {
    out[0] = true as f32;
}

#[kernel]
fn field_w(out: &mut [f32]) {
    let a = global_id().w;
}

#[kernel]
fn field_other(out: &mut [f32]) {
    let a = out.x;
}

#[kernel]
fn closure(out: &mut [f32]) {
    let f = |x: f32| x;
}

#[kernel]
fn macro_value(out: &mut [f32]) {
    let v = vec![1.0f32];
}

#[kernel]
fn reference(out: &mut [f32]) {
    let r = &out[0];
}

#[kernel]
fn if_value(out: &mut [f32]) {
    let v = if true { 1.0f32 } else { 2.0 };
}

#[kernel]
fn block_value(out: &mut [f32]) {
    let v = { 1.0f32 };
}

#[kernel]
fn tuple_value(out: &mut [f32]) {
    let v = (1.0f32, 2.0f32);
}

#[kernel]
fn struct_value(out: &mut [f32]) {
    let v = S { x: 1 };
}

#[kernel]
fn range_value(out: &mut [f32]) {
    let v = 0..2;
}

#[kernel]
fn match_value(out: &mut [f32]) {
    let v = match 1 { _ => 2 };
}

fn main() {}
