//! `.pte` bytes through the program parser, and every `.ptd` / `.npy` reader on the same
//! bytes: `Ok` or `Err`, never a panic, an abort or a runaway allocation.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = etvk_format::program::parse_program(data.to_vec());
    let _ = etvk_format::ptd::parse_ptd(data.to_vec());
    let _ = etvk_host::npy::read_bytes(data);
});
