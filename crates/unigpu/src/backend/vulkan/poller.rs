//! The thread that keeps a device's callbacks coming. wgpu runs the
//! callbacks of finished work (fences marked done, buffers mapped) only
//! when someone polls the device; rather than have every waiter poll, one
//! thread per device blocks in `poll` while work is outstanding, and sleeps
//! otherwise.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::lock::lock;

#[derive(Debug, Default)]
pub(crate) struct Poller {
    /// Submissions whose completion callback has not run yet.
    outstanding: Mutex<u64>,
    cv: Condvar,
}

impl Poller {
    /// Starts the thread for `device`; it lives as long as the process
    /// (devices are shared per adapter and kept, like CUDA's primary
    /// contexts).
    pub(crate) fn start(device: wgpu::Device) -> std::io::Result<Arc<Poller>> {
        let poller = Arc::new(Poller::default());
        let me = poller.clone();
        std::thread::Builder::new()
            .name("unigpu-vulkan-poll".into())
            .spawn(move || me.run(&device))?;
        Ok(poller)
    }

    /// Before a submission whose callback will call [`Poller::finished`].
    pub(crate) fn started(&self) {
        *lock(&self.outstanding) += 1;
        self.cv.notify_all();
    }

    pub(crate) fn finished(&self) {
        let mut n = lock(&self.outstanding);
        *n = n.saturating_sub(1);
    }

    fn run(&self, device: &wgpu::Device) {
        loop {
            {
                let mut n = lock(&self.outstanding);
                while *n == 0 {
                    n = self.cv.wait(n).unwrap_or_else(|e| e.into_inner());
                }
            }
            // Waits for everything submitted so far, then runs the
            // callbacks; a callback registered just after its submission
            // runs at the next round. A failure (a lost device) is reported
            // through the device's error handler; pause so as not to spin.
            if device.poll(wgpu::PollType::wait_indefinitely()).is_err() {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}
