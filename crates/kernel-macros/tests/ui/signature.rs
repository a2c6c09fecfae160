use unigpu_kernel_macros::kernel;

#[kernel]
const fn constant(out: &mut [f32]) {}

#[kernel]
async fn asynchronous(out: &mut [f32]) {}

#[kernel]
unsafe fn not_safe(out: &mut [f32]) {}

#[kernel]
fn generic<T>(out: &mut [T]) {}

#[kernel]
fn returns(out: &mut [f32]) -> f32 {}

struct S;
impl S {
    #[kernel]
    fn method(&self) {}
}

#[kernel]
fn pattern((a, b): (f32, f32)) {}

#[kernel]
fn mutable(mut a: f32) {}

#[kernel]
fn twice(a: f32, a: f32) {}

#[kernel]
fn lifetime(a: &'static [f32]) {}

#[kernel]
fn not_a_slice(a: &f32) {}

#[kernel]
fn half_scalar(a: f16) {}

#[kernel]
fn bool_array(a: &[bool]) {}

#[kernel]
fn vec_array(a: &[Vec<f32>]) {}

#[kernel]
fn byte_scalar(a: u8) {}

#[kernel]
fn vec_param(a: Vec<f32>) {}

#[unigpu_kernel_macros::kernel]
fn trait_object(a: &dyn Fn(f32) -> f32, out: &mut [f32]) {}

#[unigpu_kernel_macros::kernel]
fn boxed(a: Box<dyn Fn(f32) -> f32>) {}

fn main() {}
