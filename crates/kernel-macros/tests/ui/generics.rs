// The macros' expansion names `::unigpu`: here, this crate.
extern crate unigpu_kernel_macros as unigpu;

use unigpu_kernel_macros::{device, kernel};

#[kernel(T = [f32, f64])]
fn bounded<T: Copy>(out: &mut [T]) {}

#[kernel]
fn unlisted<T>(out: &mut [T]) {}

#[kernel(T = [f32, usize])]
fn outside_the_set<T>(out: &mut [T]) {}

#[kernel(T = [f32, f32])]
fn listed_twice<T>(out: &mut [T]) {}

#[kernel(T = f32)]
fn not_a_list<T>(out: &mut [T]) {}

#[kernel(U = [f32])]
fn not_a_parameter<T>(out: &mut [T]) {}

#[kernel(T = [f32])]
fn lifetime<'a, T>(out: &mut [T]) {}

#[kernel]
fn const_not_usize<const N: u32>(out: &mut [f32]) {}

#[kernel(N = [4])]
fn const_in_the_attribute<const N: usize>(out: &mut [f32]) {}

#[kernel(T = [f32])]
fn where_clause<T>(out: &mut [T])
where
    T: Copy,
{
}

// An f16 value: refused for that instance, which the message names.
#[kernel(T = [f32, f16])]
fn half_value<T>(out: &mut [T], s: T) {
    out[0] = s;
}

#[kernel]
fn assigns_its_const<const N: usize>(out: &mut [f32]) {
    N = 3;
}

#[kernel]
fn shared_of_an_expression<const N: usize>(out: &mut [f32]) {
    let t = shared::<f32, { N * 2 }>();
}

#[kernel]
fn shared_of_an_unknown_size(out: &mut [f32]) {
    let t = shared::<f32, M>();
}

#[kernel]
fn shared_over_the_limit<const N: usize>(out: &mut [f32]) {
    let a = shared::<f32, N>();
    let b = shared::<f32, 4097>();
}

#[device]
fn generic_helper<T>(x: T) -> T {
    x
}

fn main() {}
