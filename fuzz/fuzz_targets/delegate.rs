//! A delegate blob (`VH00` header + `VK00` flatbuffer) through the delegate parser.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = etvk_format::vkgraph::parse_delegate(data);
});
