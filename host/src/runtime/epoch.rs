//! The clock behind wasm interruption: a thread that advances the engine's epoch while
//! any task runs, and sleeps on a condition variable while none does (an idle node uses
//! no CPU).

use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

use wasmtime::EngineWeak;

/// How often a running task reaches an epoch check, where it yields to the executor so
/// that timeouts and cancellation take effect promptly even in a tight loop.
pub(crate) const TICK: Duration = Duration::from_millis(2);

#[derive(Default)]
struct State {
    running: usize,
    stopped: bool,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

pub(crate) struct EpochTicker {
    shared: Arc<Shared>,
}

impl EpochTicker {
    pub(crate) fn start(engines: Vec<EngineWeak>) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        });
        let thread_shared = shared.clone();
        thread::Builder::new()
            .name("qhost-epoch".into())
            .spawn(move || tick(&thread_shared, &engines))?;
        Ok(EpochTicker { shared })
    }

    /// Keeps the clock ticking until the returned guard is dropped.
    pub(crate) fn running(&self) -> RunningGuard {
        let mut state = self.shared.state.lock().expect("epoch lock");
        state.running += 1;
        if state.running == 1 {
            self.shared.wake.notify_one();
        }
        RunningGuard {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.shared.state.lock().expect("epoch lock").stopped = true;
        self.shared.wake.notify_one();
    }
}

pub(crate) struct RunningGuard {
    shared: Arc<Shared>,
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.shared.state.lock().expect("epoch lock").running -= 1;
    }
}

fn tick(shared: &Shared, engines: &[EngineWeak]) {
    loop {
        {
            let mut state = shared.state.lock().expect("epoch lock");
            while state.running == 0 && !state.stopped {
                state = shared.wake.wait(state).expect("epoch lock");
            }
            if state.stopped {
                return;
            }
        }
        thread::sleep(TICK);
        for engine in engines {
            match engine.upgrade() {
                Some(engine) => engine.increment_epoch(),
                None => return,
            }
        }
    }
}
