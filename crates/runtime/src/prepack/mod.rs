//! Packed GPU layouts of constants that ops read in a form other than the serialized one.
//!
//! Each layout has a CPU reference packer (the [`crate::builder::Layout`] pack function, also
//! the load path when no GPU transform exists or the compile spec
//! [`crate::builder::CPU_PREPACK_SPEC`] asks for it) and, where the transform is worth doing
//! on the device, a [`crate::builder::GpuPackFn`] whose shader must produce the same bytes
//! (tests read both back with `Delegate::read_prepacked` and compare them bit for bit).

pub mod q4;
