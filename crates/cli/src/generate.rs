//! `etvk generate`: token generation with an ExecuTorch Llama export (prefill, then decode
//! with the KV cache the program keeps on the GPU).
//!
//! The method's inputs are the token ids (`[1, L]`, int64; `L` is 1 for a one-token program
//! or dynamic up to the exported maximum) and, for KV-cache programs, the position of the
//! first token (`input_pos`, int64 `[1]`). The first output holds the logits: `[1, V]`
//! (the last token's), `[1, L, V]` or `[L, V]` (every token's; the last row is used).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use etvk_format::program_ir::Program;
use etvk_host::{
    load_program, HostOptions, LoadedMethod, MethodValue, Tensor, ValueInfo,
    DEFAULT_MAX_INSTRUCTIONS,
};
use etvk_runtime::RuntimeOptions;

use crate::error::CliError;
use crate::profile::ProfileTable;

/// Arguments of `etvk generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// The `.pte` file (an ExecuTorch Llama export).
    pub model: PathBuf,
    /// Method to run.
    #[arg(long, default_value = "forward")]
    pub method: String,
    /// The etvk plugin (default: $ETVK_PLUGIN, else libetvk next to this executable).
    #[arg(long)]
    pub plugin: Option<PathBuf>,
    /// Prompt token ids, comma-separated.
    #[arg(long, value_name = "ID,ID,...", required = true)]
    pub prompt_tokens: String,
    /// Tokens to generate after the prompt.
    #[arg(long, default_value_t = 16)]
    pub max_new: usize,
    /// Sampling temperature; 0 (the default) is greedy (argmax).
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    /// Nucleus sampling: keep the smallest set of tokens whose probability reaches P.
    #[arg(long, default_value_t = 1.0)]
    pub top_p: f64,
    /// Seed of the sampler.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print a per-op GPU time table (summed over every call).
    #[arg(long)]
    pub profile: bool,
    /// Op rows the profile table shows, largest first (0: every row).
    #[arg(long, default_value_t = 15, value_name = "N")]
    pub profile_rows: usize,
}

/// How the program takes its inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Signature {
    /// Most tokens one call takes.
    max_tokens: usize,
    /// Whether fewer tokens than `max_tokens` may be passed.
    dynamic: bool,
    /// Whether there is an `input_pos` input (a KV-cache program).
    has_pos: bool,
}

fn signature(inputs: &[ValueInfo]) -> Result<Signature, CliError> {
    let bad = |why: &str| {
        CliError(format!(
            "not a Llama-style program ({why}): generate needs inputs (tokens int [1, L]) or \
             (tokens int [1, L], input_pos int [1])"
        ))
    };
    let (max_tokens, dynamic) = match inputs.first() {
        Some(ValueInfo::Tensor {
            dtype,
            max_sizes,
            dynamic,
        }) if !dtype.is_float() && max_sizes.len() == 2 && max_sizes[0] == 1 => {
            (max_sizes[1], *dynamic)
        }
        Some(other) => return Err(bad(&format!("input 0 is {other:?}"))),
        None => return Err(bad("no inputs")),
    };
    let has_pos = match inputs.get(1) {
        None => false,
        Some(ValueInfo::Tensor {
            dtype, max_sizes, ..
        }) if !dtype.is_float() && max_sizes.iter().product::<usize>() == 1 => true,
        Some(other) => return Err(bad(&format!("input 1 is {other:?}"))),
    };
    if inputs.len() > 2 {
        return Err(bad(&format!("{} inputs", inputs.len())));
    }
    if max_tokens == 0 {
        return Err(bad("the token input holds 0 tokens"));
    }
    Ok(Signature {
        max_tokens,
        dynamic,
        has_pos,
    })
}

/// The constant method of ExecuTorch Llama exports that gives the KV cache's length.
const CONTEXT_METHOD: &str = "get_max_context_len";

/// The program's context length from its [`CONTEXT_METHOD`], when it has that method.
fn max_context_len(program: &Arc<Program>) -> Result<Option<usize>, CliError> {
    if program.plan(CONTEXT_METHOD).is_none() {
        return Ok(None);
    }
    let mut method = LoadedMethod::load_with_backend(
        program.clone(),
        CONTEXT_METHOD,
        None,
        DEFAULT_MAX_INSTRUCTIONS,
    )?;
    match method.execute_values(&[])?.first() {
        Some(MethodValue::Int(n)) if *n > 0 => Ok(usize::try_from(*n).ok()),
        other => Err(CliError(format!(
            "{CONTEXT_METHOD} returned {other:?}, not a positive int"
        ))),
    }
}

/// Tokens to generate within a KV cache of `context` positions: the prompt and every
/// generated token but the last are fed, so `prompt + new - 1 <= context`. `Err` when the
/// prompt alone does not fit.
fn new_tokens_within(context: usize, prompt: usize, max_new: usize) -> Result<usize, CliError> {
    if prompt > context {
        return Err(CliError(format!(
            "the prompt's {prompt} tokens exceed the program's context of {context} tokens \
             ({CONTEXT_METHOD})"
        )));
    }
    Ok(max_new.min(context + 1 - prompt))
}

/// splitmix64: a small, seedable generator for the sampler.
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Pick the next token from `logits`: argmax when `temperature <= 0`, else a sample from
/// softmax(logits / temperature) cut to the top-p nucleus.
fn pick(logits: &[f64], temperature: f64, top_p: f64, rng: &mut Rng) -> usize {
    let argmax = || {
        logits
            .iter()
            .enumerate()
            .fold((0usize, f64::NEG_INFINITY), |best, (i, &v)| {
                if v > best.1 {
                    (i, v)
                } else {
                    best
                }
            })
            .0
    };
    if temperature <= 0.0 {
        return argmax();
    }
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return argmax();
    }
    let mut probs: Vec<(usize, f64)> = logits
        .iter()
        .enumerate()
        .map(|(i, &v)| (i, ((v - max) / temperature).exp()))
        .collect();
    let sum: f64 = probs.iter().map(|p| p.1).sum();
    probs.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut kept = 0.0;
    let mut n = 0;
    for p in &probs {
        kept += p.1 / sum;
        n += 1;
        if kept >= top_p {
            break;
        }
    }
    let probs = &probs[..n.max(1)];
    let mass: f64 = probs.iter().map(|p| p.1).sum();
    let mut r = rng.next_f64() * mass;
    for p in probs {
        if r < p.1 {
            return p.0;
        }
        r -= p.1;
    }
    probs[probs.len() - 1].0
}

/// The logits row of the last token fed, as f64.
fn last_logits(out: &MethodValue, fed: usize) -> Result<Vec<f64>, CliError> {
    let MethodValue::Tensor(t) = out else {
        return Err(CliError(format!(
            "output 0 is {}, expected the logits tensor",
            crate::run::summarize(out)
        )));
    };
    let v = *t.sizes.last().unwrap_or(&0);
    let rows = t.numel().checked_div(v).unwrap_or(0);
    if v == 0 || rows == 0 {
        return Err(CliError(format!("logits have sizes {:?}", t.sizes)));
    }
    // [1, V] holds only the last token's row; [1, L, V] / [L, V] one row per token fed.
    let row = if rows == 1 { 0 } else { fed.min(rows) - 1 };
    let all = t.to_f64_vec()?;
    Ok(all[row * v..(row + 1) * v].to_vec())
}

fn token_input(tokens: &[i64]) -> Result<MethodValue, CliError> {
    Ok(MethodValue::Tensor(Tensor::from_i64(
        vec![1, tokens.len()],
        tokens,
    )?))
}

fn pos_input(pos: usize) -> Result<MethodValue, CliError> {
    Ok(MethodValue::Tensor(Tensor::from_i64(
        vec![1],
        &[pos as i64],
    )?))
}

/// Run `etvk generate`.
pub fn generate(args: &GenerateArgs) -> Result<(), CliError> {
    let prompt: Vec<i64> = args
        .prompt_tokens
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<i64>()
                .map_err(|_| CliError(format!("--prompt-tokens: {s:?} is not a token id")))
        })
        .collect::<Result<_, _>>()?;
    if prompt.is_empty() {
        return Err(CliError("--prompt-tokens: no tokens".into()));
    }
    if !(args.top_p > 0.0 && args.top_p <= 1.0) {
        return Err(CliError(format!(
            "--top-p {} is outside (0, 1]",
            args.top_p
        )));
    }
    if !args.temperature.is_finite() || args.temperature < 0.0 {
        return Err(CliError(format!(
            "--temperature {} must be a finite value >= 0",
            args.temperature
        )));
    }
    let device = etvk_runtime::list_devices(&RuntimeOptions::from_env())?
        .into_iter()
        .find(|d| d.selected)
        .map(|d| format!("{} ({})", d.name, d.device_type))
        .unwrap_or_else(|| "no Vulkan device".into());
    let options = HostOptions {
        plugin_path: args.plugin.clone(),
        ..HostOptions::default()
    };
    let t0 = Instant::now();
    let program = Arc::new(load_program(&args.model)?);
    let mut method = LoadedMethod::load(program.clone(), &args.method, &options)?;
    let sig = signature(&method.inputs())?;
    // A KV-cache program cannot take positions past its cache: stop there, as ExecuTorch's
    // Llama runner does, instead of failing at the first call beyond it. A program whose
    // context method cannot run still generates, unbounded, with a note.
    let context = if sig.has_pos {
        max_context_len(&program).unwrap_or_else(|e| {
            outln!(
                "note: {CONTEXT_METHOD} not read ({}); --max-new is not bounded by the context",
                e.0
            );
            None
        })
    } else {
        None
    };
    let max_new = match context {
        Some(c) => new_tokens_within(c, prompt.len(), args.max_new)?,
        None => args.max_new,
    };
    outln!(
        "device: {device}\nloaded {} in {:.1} ms ({} delegate(s)); tokens per call: {}{}, {}",
        args.model.display(),
        t0.elapsed().as_secs_f64() * 1e3,
        method.num_delegates(),
        if sig.dynamic { "1.." } else { "" },
        sig.max_tokens,
        if sig.has_pos {
            "KV cache (input_pos)"
        } else {
            "no KV cache: the whole sequence is fed every step"
        }
    );
    if max_new < args.max_new {
        outln!(
            "--max-new {} cut to {max_new}: the program's context holds {} tokens and the prompt {}",
            args.max_new,
            context.unwrap_or(0),
            prompt.len()
        );
    }
    method.set_profiling(args.profile)?;
    let mut table = ProfileTable::default();
    let mut rng = Rng(args.seed);
    let mut seq: Vec<i64> = prompt.clone();
    let call = |method: &mut LoadedMethod,
                table: &mut ProfileTable,
                tokens: &[i64],
                pos: usize|
     -> Result<Vec<f64>, CliError> {
        let mut inputs = vec![token_input(tokens)?];
        if sig.has_pos {
            inputs.push(pos_input(pos)?);
        }
        let out = method.execute_values(&inputs).map_err(|e| {
            CliError(format!(
                "call with {} token(s) at position {pos}: {e}",
                tokens.len()
            ))
        })?;
        if args.profile {
            table.add(method.last_profile());
        }
        last_logits(
            out.first()
                .ok_or_else(|| CliError("the method returned no outputs".into()))?,
            tokens.len(),
        )
    };

    // Prefill: as many prompt tokens per call as the program takes.
    let fits = |n: usize| n == sig.max_tokens || (sig.dynamic && n <= sig.max_tokens);
    let t_prefill = Instant::now();
    let mut logits = Vec::new();
    let mut prefill_calls = 0usize;
    if sig.has_pos {
        let mut at = 0;
        while at < prompt.len() {
            let left = prompt.len() - at;
            let n = if sig.dynamic {
                left.min(sig.max_tokens)
            } else {
                sig.max_tokens
            };
            if !fits(n) || n > left {
                return Err(CliError(format!(
                    "the program takes exactly {} tokens per call and {left} prompt token(s) are left: \
                     use a prompt length that is a multiple of {}",
                    sig.max_tokens, sig.max_tokens
                )));
            }
            logits = call(&mut method, &mut table, &prompt[at..at + n], at)?;
            prefill_calls += 1;
            at += n;
        }
    } else {
        if !fits(prompt.len()) {
            return Err(CliError(format!(
                "a program without a KV cache is fed the whole sequence, and it takes {}{} tokens (prompt: {})",
                if sig.dynamic { "at most " } else { "exactly " },
                sig.max_tokens,
                prompt.len()
            )));
        }
        logits = call(&mut method, &mut table, &prompt, 0)?;
        prefill_calls += 1;
    }
    let prefill_s = t_prefill.elapsed().as_secs_f64();
    let prompt_list: Vec<String> = prompt.iter().map(i64::to_string).collect();
    outln!("prompt: [{}]", prompt_list.join(", "));

    // Decode: one token per call from the KV cache (or the whole sequence without one).
    let mut generated: Vec<i64> = Vec::new();
    let t_decode = Instant::now();
    let mut decode_calls = 0usize;
    while generated.len() < max_new {
        let next = pick(&logits, args.temperature, args.top_p, &mut rng) as i64;
        generated.push(next);
        seq.push(next);
        outln!("token {:>4}: {next}", seq.len() - 1);
        if generated.len() == max_new {
            break;
        }
        logits = if sig.has_pos {
            call(&mut method, &mut table, &[next], seq.len() - 1)?
        } else {
            if !fits(seq.len()) {
                outln!(
                    "stopping: the sequence reached the {} tokens the program takes",
                    sig.max_tokens
                );
                break;
            }
            call(&mut method, &mut table, &seq, 0)?
        };
        decode_calls += 1;
    }
    let decode_s = t_decode.elapsed().as_secs_f64();
    let gen_list: Vec<String> = generated.iter().map(i64::to_string).collect();
    outln!("generated: [{}]", gen_list.join(", "));
    outln!(
        "prefill: {} token(s) in {} call(s), {:.2} ms, {:.1} tokens/s",
        prompt.len(),
        prefill_calls,
        prefill_s * 1e3,
        prompt.len() as f64 / prefill_s.max(1e-9)
    );
    if decode_calls > 0 {
        outln!(
            "decode: {} call(s), {:.2} ms, {:.1} tokens/s ({:.3} ms per token)",
            decode_calls,
            decode_s * 1e3,
            decode_calls as f64 / decode_s.max(1e-9),
            decode_s * 1e3 / decode_calls as f64
        );
    } else {
        outln!("decode: no decode calls (--max-new {max_new})");
    }
    if args.profile {
        outln!(
            "{}",
            table
                .render((args.profile_rows > 0).then_some(args.profile_rows))
                .trim_end()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use etvk_host::dtype::DType;

    use super::*;

    #[test]
    fn new_tokens_stop_at_the_context() {
        // Context 32, prompt 3: positions 0..2 prompt, 3..31 for 29 fed tokens, 30 new.
        assert_eq!(new_tokens_within(32, 3, 100).unwrap(), 30);
        assert_eq!(new_tokens_within(32, 3, 16).unwrap(), 16);
        assert_eq!(new_tokens_within(32, 32, 5).unwrap(), 1);
        let e = new_tokens_within(32, 33, 5).unwrap_err();
        assert!(e.0.contains("33") && e.0.contains("32"), "{}", e.0);
    }

    #[test]
    fn greedy_is_argmax_first_on_ties() {
        let mut rng = Rng(1);
        assert_eq!(pick(&[0.0, 3.0, 3.0, -1.0], 0.0, 1.0, &mut rng), 1);
    }

    #[test]
    fn tiny_top_p_keeps_only_the_best_token() {
        let mut rng = Rng(7);
        for _ in 0..50 {
            assert_eq!(pick(&[0.1, 2.0, 1.9, -5.0], 1.0, 1e-6, &mut rng), 1);
        }
    }

    #[test]
    fn sampling_follows_the_softmax() {
        // Temperature 1 over logits ln(1), ln(3): token 1 drawn ~75% of the time.
        let mut rng = Rng(42);
        let logits = [0.0, 3f64.ln()];
        let n = 20000;
        let ones = (0..n)
            .filter(|_| pick(&logits, 1.0, 1.0, &mut rng) == 1)
            .count();
        let frac = ones as f64 / n as f64;
        assert!((frac - 0.75).abs() < 0.015, "{frac}");
    }

    #[test]
    fn signature_reads_llama_inputs() {
        let tok = |l: usize, dynamic: bool| ValueInfo::Tensor {
            dtype: DType::I64,
            max_sizes: vec![1, l],
            dynamic,
        };
        let pos = ValueInfo::Tensor {
            dtype: DType::I64,
            max_sizes: vec![1],
            dynamic: false,
        };
        assert_eq!(
            signature(&[tok(1, false), pos.clone()]).unwrap(),
            Signature {
                max_tokens: 1,
                dynamic: false,
                has_pos: true
            }
        );
        assert!(signature(&[tok(16, true)]).unwrap().dynamic);
        let float = ValueInfo::Tensor {
            dtype: DType::F32,
            max_sizes: vec![1, 4],
            dynamic: false,
        };
        assert!(signature(&[float]).is_err());
        assert!(signature(&[]).is_err());
    }
}
