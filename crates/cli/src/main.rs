//! `etvk`: run, inspect and benchmark ExecuTorch `.pte` programs with the etvk Vulkan delegate.
//!
//! Every failure exits with code 1 and one line `etvk: error: <what and where>` on stderr.

/// `println!` that does not panic when stdout is closed (`etvk ops | head`): a broken
/// pipe ends the process quietly, any other write error is a one-line error.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout().lock(), $($arg)*) {
            crate::stdout_failed(&e);
        }
    }};
}

mod bench;
mod check;
mod devices;
mod error;
mod finetune;
mod generate;
mod inspect;
mod ops;
mod profile;
mod run;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::CliError;

/// Command line.
#[derive(Debug, Parser)]
#[command(
    name = "etvk",
    version,
    about = "Vulkan delegate backend for ExecuTorch .pte programs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Load a program once and run calls of one method on it, in order.
    Run(run::RunArgs),
    /// Show a program's layout, plans, delegates and their VkGraphs.
    Inspect {
        /// The `.pte` file.
        model: PathBuf,
    },
    /// Generate tokens with an ExecuTorch Llama export: prefill, then decode with its KV cache.
    Generate(generate::GenerateArgs),
    /// Run fixture directories (model.pte + io.json) and compare with their expected outputs.
    Check(check::CheckArgs),
    /// Time a kernel with GPU timestamps against the memory ceilings measured in the same run.
    Bench(bench::BenchArgs),
    /// LoRA fine-tuning on a frozen 4-bit base, on the GPU, checked against a reference.
    Finetune(finetune::FinetuneArgs),
    /// List the operators the Vulkan runtime implements.
    Ops,
    /// List the Vulkan devices (ETVK_DEVICE selects one).
    Devices,
}

/// Exit after a failed write to stdout.
fn stdout_failed(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("etvk: error: writing to stdout: {e}");
    std::process::exit(1);
}

fn dispatch(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Inspect { model } => inspect::inspect(&model),
        Command::Check(args) => check::check(&args),
        Command::Generate(args) => generate::generate(&args),
        Command::Bench(args) => bench::bench(&args),
        Command::Finetune(args) => finetune::finetune(&args),
        Command::Ops => ops::ops(),
        Command::Devices => devices::devices(),
    }
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                use std::io::Write as _;
                // A closed stdout (`etvk --help | head -1`) is not an error here.
                let _ = write!(std::io::stdout().lock(), "{e}");
                return ExitCode::SUCCESS;
            }
            // clap's message is multi-line (what, then usage and a tip); keep what, on one line.
            let rendered = e.to_string();
            let what: Vec<&str> = rendered
                .lines()
                .map(str::trim)
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
                .filter(|l| !l.is_empty() && !l.starts_with("tip:"))
                .collect();
            let what = what.join(" ");
            let what = what.strip_prefix("error: ").unwrap_or(&what);
            eprintln!("etvk: error: {what} (see etvk --help)");
            return ExitCode::from(1);
        }
    };
    match dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("etvk: error: {}", e.one_line());
            ExitCode::from(1)
        }
    }
}
