//! `misbehave`: a task that does what its input says, including everything a task must
//! not do. Input is `COMMAND` or `COMMAND:ARGUMENT`:
//!
//! | command | what it does |
//! |---|---|
//! | `ok` | returns `ok` |
//! | `spin` | loops forever |
//! | `alloc` | allocates 1 MiB blocks without bound |
//! | `trap` | executes `unreachable` |
//! | `panic` | panics (a trap, with the message on stderr) |
//! | `recurse` | recurses without bound |
//! | `error` | returns `err("asked to fail")` |
//! | `error:N` | returns an error message of N bytes |
//! | `stdout:N` / `stderr:N` | writes N bytes to stdout / stderr, then returns `ok` |
//! | `binary` | writes `a`, the byte 0xff (not UTF-8) and a newline to stdout, returns `ok` |
//! | `log:N` | logs N lines, then returns `ok` |
//! | `flood` / `flood:N` | logs empty lines without end / N of them, then returns `ok` |
//! | `output:N` | returns N bytes |
//! | `sleep:MS` | sleeps MS milliseconds, returns `ok` |
//! | `info` | returns the task info it was given |
//! | `sandbox` | returns what it can see: arguments, environment, stdin, preopens |
//! | `mark:MS` | creates `/out/<task id>-<attempt>`, then sleeps MS milliseconds |
//! | `read:PATH` | returns the contents of the file PATH |
//! | `write:PATH` | writes `written` to PATH, returns `ok` |
//! | `symlink:TARGET` | makes a link `link` to TARGET in the first mount, returns `ok` |
//! | `plant:MIB` | writes a secret word over its data, stack, MIB MiB of heap and MIB MiB of memory grown past the heap; returns `found=W pages=P`, the secret words its own scan found and its memory's size |
//! | `scan:PAGES` | grows its memory to PAGES pages, returns `found=W`: the secret words anywhere in it |
//! | `hold:PAGES` | grows its memory to PAGES pages, sleeps 300 ms, returns `ok` |

use core::arch::wasm32::{memory_grow, memory_size};
use std::hint::black_box;
use std::io::{Read, Write};

use qhost::task::host::log;
use qhost::task::types::Level;

wit_bindgen::generate!({ path: "../../../wit", world: "qhost:task/task" });

struct Misbehave;

impl Guest for Misbehave {
    fn run(input: Vec<u8>, info: TaskInfo) -> Result<Vec<u8>, String> {
        let input = String::from_utf8(input).map_err(|e| e.to_string())?;
        let (command, argument) = input.split_once(':').unwrap_or((&input, ""));
        let count = || {
            argument
                .parse::<usize>()
                .map_err(|e| format!("{argument}: {e}"))
        };
        match command {
            "ok" => Ok(b"ok".to_vec()),
            "spin" => loop {
                black_box(());
            },
            "alloc" => {
                let mut blocks = Vec::new();
                loop {
                    blocks.push(black_box(vec![1u8; 1 << 20]));
                }
            }
            "trap" => core::arch::wasm32::unreachable(),
            "panic" => panic!("asked to panic"),
            "recurse" => Ok(recurse(black_box(1)).to_le_bytes().to_vec()),
            "error" if argument.is_empty() => Err("asked to fail".into()),
            "error" => Err("e".repeat(count()?)),
            "stdout" | "stderr" => {
                let line = [b'x'; 99];
                let mut left = count()?;
                while left > 0 {
                    let n = left.min(100);
                    let chunk: Vec<u8> = line[..n - 1].iter().copied().chain([b'\n']).collect();
                    if command == "stdout" {
                        std::io::stdout()
                            .write_all(&chunk)
                            .map_err(|e| e.to_string())?;
                    } else {
                        std::io::stderr()
                            .write_all(&chunk)
                            .map_err(|e| e.to_string())?;
                    }
                    left -= n;
                }
                Ok(b"ok".to_vec())
            }
            "binary" => {
                std::io::stdout()
                    .write_all(&[b'a', 0xff, b'\n'])
                    .map_err(|e| e.to_string())?;
                Ok(b"ok".to_vec())
            }
            "log" => {
                for i in 0..count()? {
                    log(Level::Info, &format!("line {i}"));
                }
                Ok(b"ok".to_vec())
            }
            "flood" if argument.is_empty() => loop {
                log(Level::Info, "");
            },
            "flood" => {
                for _ in 0..count()? {
                    log(Level::Info, "");
                }
                Ok(b"ok".to_vec())
            }
            "output" => Ok(vec![b'o'; count()?]),
            "sleep" => {
                std::thread::sleep(std::time::Duration::from_millis(count()? as u64));
                Ok(b"ok".to_vec())
            }
            "info" => Ok(format!(
                "id={} batch={} attempt={} order={} group={}",
                info.id,
                info.batch,
                info.attempt,
                info.order,
                info.group.as_deref().unwrap_or("-")
            )
            .into_bytes()),
            "sandbox" => {
                let mut stdin = Vec::new();
                let stdin_result = std::io::stdin().read_to_end(&mut stdin);
                let root = std::fs::read_dir("/").map(|d| d.count()).unwrap_or(0);
                let net = std::net::TcpStream::connect("127.0.0.1:80").is_ok();
                Ok(format!(
                    "args={} env={} stdin={} root_entries={root} network={net}",
                    std::env::args().count(),
                    std::env::vars().count(),
                    stdin_result
                        .map(|n| n.to_string())
                        .unwrap_or_else(|_| "closed".into()),
                )
                .into_bytes())
            }
            "mark" => {
                let path = format!("/out/{}-{}", info.id, info.attempt);
                std::fs::write(&path, b"").map_err(|e| format!("writing {path}: {e}"))?;
                std::thread::sleep(std::time::Duration::from_millis(count()? as u64));
                Ok(b"ok".to_vec())
            }
            "read" => std::fs::read(argument).map_err(|e| format!("reading {argument}: {e}")),
            "write" => std::fs::write(argument, b"written")
                .map(|()| b"ok".to_vec())
                .map_err(|e| format!("writing {argument}: {e}")),
            "symlink" => {
                let (mount, _) = wasip2::filesystem::preopens::get_directories()
                    .into_iter()
                    .next()
                    .ok_or("no mount")?;
                mount
                    .symlink_at(argument, "link")
                    .map(|()| b"ok".to_vec())
                    .map_err(|e| format!("linking to {argument}: {e}"))
            }
            "plant" => {
                let mib = count()?;
                plant(mib);
                Ok(format!("found={} pages={}", scan(), memory_size(0)).into_bytes())
            }
            "scan" => {
                let pages = count()?;
                let now = memory_size(0);
                if pages > now && memory_grow(0, pages - now) == usize::MAX {
                    return Err(format!("could not grow memory to {pages} pages"));
                }
                Ok(format!("found={}", scan()).into_bytes())
            }
            "hold" => {
                let pages = count()?;
                let now = memory_size(0);
                if pages > now && memory_grow(0, pages - now) == usize::MAX {
                    return Err(format!("could not grow memory to {pages} pages"));
                }
                std::thread::sleep(std::time::Duration::from_millis(300));
                Ok(b"ok".to_vec())
            }
            other => Err(format!("unknown command `{other}`")),
        }
    }
}

const PAGE: usize = 65536;

/// Initialized data, so in the component's data segment (and its memory image).
static mut DATA: [u64; 4096] = [1; 4096];

/// The word `plant` leaves behind, made at run time so that no data segment holds it and
/// `scan` finds only what a task wrote.
fn secret() -> u64 {
    black_box(0x5ec2_e7ed_u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Writes the secret over the data segment, 64 KiB of stack, `mib` MiB of heap, and `mib`
/// MiB of memory grown without the allocator knowing.
fn plant(mib: usize) {
    let word = secret();
    // Through black_box, so the compiler keeps a static that is only written.
    let data = black_box(std::ptr::addr_of_mut!(DATA));
    // SAFETY: one task runs at a time in an instance; nothing else holds DATA.
    unsafe { (*data).fill(word) };
    black_box(&[word; 8192]);
    let heap = vec![word; mib << 17];
    std::mem::forget(black_box(heap));
    let pages = mib * 16;
    let first = memory_grow(0, pages);
    assert_ne!(first, usize::MAX, "memory.grow failed");
    let grown = std::ptr::with_exposed_provenance_mut::<u64>(first * PAGE);
    for i in 0..pages * PAGE / 8 {
        // SAFETY: the pages were just grown, and nothing else uses them.
        unsafe { grown.add(i).write_volatile(word) };
    }
}

/// Counts the secret words in all of linear memory but its first word (address 0).
fn scan() -> usize {
    let word = secret();
    let words = memory_size(0) * PAGE / 8;
    (1..words)
        // SAFETY: every address below memory.size is readable.
        .filter(
            |&i| unsafe { std::ptr::with_exposed_provenance::<u64>(i * 8).read_volatile() } == word,
        )
        .count()
}

/// Recurses through a function pointer, so the compiler cannot turn it into a loop, and
/// without locals in linear memory, so it exhausts the wasm call stack itself.
fn recurse(depth: u64) -> u64 {
    let next: fn(u64) -> u64 = black_box(recurse);
    next(depth + 1).wrapping_mul(3)
}

export!(Misbehave);
