//! Many GPUs: [`Communicator`] (collectives and send/recv over one rank
//! per GPU, in one process or many) and [`Rendezvous`] (how processes on
//! one machine or many find each other). docs/multi-gpu.md is the guide.
//!
//! - `communicator.rs`: what a communicator is made from, its waits;
//! - `collectives.rs`: the collectives on arrays;
//! - `rendezvous/`: the TCP and file protocols that hand rank 0's id to
//!   every process.
//!
//! The backend part (which library, which handles) is behind
//! `backend/comm.rs`, like every backend's code.

mod collectives;
mod communicator;
pub mod rendezvous;

pub use collectives::ReduceOp;
pub use communicator::Communicator;
pub use rendezvous::{Meeting, Rendezvous};
