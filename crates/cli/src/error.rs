//! The CLI's error: a message that says what failed and where.

/// A failed command.
#[derive(Debug)]
pub struct CliError(pub String);

impl CliError {
    /// The message on one line (newlines from nested errors folded).
    pub fn one_line(&self) -> String {
        self.0
            .split('\n')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl From<etvk_host::HostError> for CliError {
    fn from(e: etvk_host::HostError) -> Self {
        CliError(e.to_string())
    }
}

impl From<etvk_runtime::Error> for CliError {
    fn from(e: etvk_runtime::Error) -> Self {
        CliError(e.to_string())
    }
}

impl From<String> for CliError {
    fn from(s: String) -> Self {
        CliError(s)
    }
}
