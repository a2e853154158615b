//! `.pte` parsing. (FORMAT agent: implement; keep the signature.)
use crate::error::FormatError;
use crate::program_ir::Program;

/// Parse and validate a whole `.pte` file.
pub fn parse_program(_bytes: Vec<u8>) -> Result<Program, FormatError> {
    Err(FormatError::Other("parse_program not implemented yet".into()))
}
