//! Preprocessed GLSL compute shader on stdin -> SPIR-V 1.6 (Vulkan 1.3) at the path given.
use glslang::{
    Compiler, CompilerOptions, Shader, ShaderInput, ShaderMessage, ShaderSource, ShaderStage,
    SourceLanguage, SpirvVersion, Target, VulkanVersion,
};
use std::io::Read;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(out) = std::env::args().nth(1) else {
        eprintln!("usage: glsl2spv OUT.spv < preprocessed.comp");
        return ExitCode::FAILURE;
    };
    let mut src = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut src) {
        eprintln!("glsl2spv: reading stdin: {e}");
        return ExitCode::FAILURE;
    }
    match compile(src) {
        Ok(words) => {
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            match std::fs::write(&out, bytes) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("glsl2spv: writing {out}: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(e) => {
            eprintln!("glsl2spv: {e}");
            ExitCode::FAILURE
        }
    }
}

fn compile(src: String) -> Result<Vec<u32>, String> {
    let compiler = Compiler::acquire().ok_or("glslang unavailable")?;
    let source = ShaderSource::from(src);
    // GL_NV_cooperative_matrix2 needs SPIR-V 1.6 in glslang.
    let opts = CompilerOptions {
        source_language: SourceLanguage::GLSL,
        target: Target::Vulkan {
            version: VulkanVersion::Vulkan1_3,
            spirv_version: SpirvVersion::SPIRV1_6,
        },
        version_profile: None,
        messages: ShaderMessage::DEFAULT,
    };
    let input = ShaderInput::new(&source, ShaderStage::Compute, &opts, None, None)
        .map_err(|e| format!("{e:?}"))?;
    let shader = Shader::new(compiler, input)
        .parse()
        .map_err(|e| format!("{e:?}"))?;
    shader.compile().map_err(|e| format!("{e:?}"))
}
