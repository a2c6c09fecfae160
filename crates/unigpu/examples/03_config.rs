//! Choosing the backend and device from a config file or the environment.
//!
//!     cargo run -p unigpu --example 03_config -- path/to/unigpu.toml
//!     UNIGPU_BACKEND=cpu cargo run -p unigpu --example 03_config

use unigpu::Context;

fn main() {
    let ctx = match std::env::args().nth(1) {
        Some(path) => Context::from_config_file(path),
        None => Context::default(),
    };
    match ctx {
        Ok(ctx) => {
            println!("config file: {:?}", ctx.config().source);
            println!(
                "backend {} device {} dtype {}",
                ctx.backend(),
                ctx.device_id(),
                ctx.dtype()
            );
        }
        // Config errors name the file, line, key, value and allowed values.
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
