//! The original design's stream example: two streams from c10's pool, two
//! 1000×1000 tensors moved to the GPU on different streams, relu on one and
//! sigmoid on the other, both streams synced, results checked on the host.
//!
//!     PATH=.venv-torch/bin:$PATH LIBTORCH_USE_PYTORCH=1 \
//!     LD_LIBRARY_PATH=.venv-torch/lib/python3.11/site-packages/torch/lib \
//!     cargo run -p unigpu-torch-bridge --features unigpu-torch-bridge/torch --example torch_streams

#[cfg(feature = "torch")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    use unigpu_torch_bridge as c10;

    let status = c10::cuda_status()?;
    if !status.is_empty() {
        return Err(format!("this example needs CUDA through torch: {status}").into());
    }
    let s1 = c10::stream_from_pool(0, false)?;
    let s2 = c10::stream_from_pool(0, false)?;

    let x1 = c10::tensor_randn(&[1000, 1000], -1)?.pin_memory()?;
    let x2 = c10::tensor_randn(&[1000, 1000], -1)?.pin_memory()?;
    let g1 = x1.to_stream(0, true, &s1)?;
    let g2 = x2.to_stream(0, true, &s2)?;
    let r1 = {
        let _on_s1 = c10::guard_stream(&s1)?;
        g1.relu()?
    };
    let r2 = {
        let _on_s2 = c10::guard_stream(&s2)?;
        g2.sigmoid()?
    };
    s1.synchronize()?;
    s2.synchronize()?;

    let (h1, h2) = (x1.to_f32_vec()?, x2.to_f32_vec()?);
    let relu_ok = r1
        .to_f32_vec()?
        .iter()
        .zip(&h1)
        .all(|(r, x)| *r == x.max(0.0));
    let sigmoid_ok = r2
        .to_f32_vec()?
        .iter()
        .zip(&h2)
        .all(|(r, x)| (*r as f64 - 1.0 / (1.0 + (-(*x as f64)).exp())).abs() <= 1e-6);
    if !(relu_ok && sigmoid_ok) {
        return Err(format!("wrong results: relu ok {relu_ok}, sigmoid ok {sigmoid_ok}").into());
    }
    println!(
        "streams {} and {}: relu and sigmoid of two 1000x1000 tensors match the host",
        s1.id()?,
        s2.id()?
    );
    Ok(())
}

#[cfg(not(feature = "torch"))]
fn main() {
    eprintln!("build with --features unigpu-torch-bridge/torch (see docs/torch.md)");
    std::process::exit(2);
}
