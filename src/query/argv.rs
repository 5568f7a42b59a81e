//! nvidia-smi's command line on gpuwatch's: `gpuwatch --query-gpu=… --format=csv`, `gpuwatch
//! -L` and `gpuwatch query -i 0 -lms 500` are rewritten to the `query` subcommand's long
//! flags before clap parses them. `-i` is gpuwatch's `--interval` everywhere else, and
//! `-lms` is not a flag clap can spell, so the rewrite happens only when the command line is a
//! query (the `query` word, or one of nvidia-smi's query flags).

use std::ffi::OsString;

/// The flags that make a command line nvidia-smi's query.
fn is_query_flag(arg: &str) -> bool {
    ["--query-gpu", "--query-compute-apps"]
        .iter()
        .any(|f| arg == *f || arg.starts_with(&format!("{f}=")))
        || arg == "-L"
        || arg == "--list-gpus"
}

/// `args` (with the program name first) as clap should see them.
pub fn rewrite(args: Vec<OsString>) -> Vec<OsString> {
    let text = |a: &OsString| a.to_str().map(str::to_string).unwrap_or_default();
    let has_word = args.iter().skip(1).any(|a| a == "query");
    let has_flag = args.iter().skip(1).any(|a| is_query_flag(&text(a)));
    if !has_word && !has_flag {
        return args;
    }
    let mut out: Vec<OsString> = Vec::with_capacity(args.len() + 1);
    let mut rest = args.into_iter();
    out.extend(rest.next());
    if !has_word {
        out.push("query".into());
    }
    for arg in rest {
        let spelled = match text(&arg).as_str() {
            "-i" => "--id",
            "-lms" => "--loop-ms",
            _ => {
                out.push(arg);
                continue;
            }
        };
        out.push(spelled.into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(line: &str) -> String {
        let args = line.split(' ').map(OsString::from).collect();
        let out: Vec<String> = rewrite(args)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        out.join(" ")
    }

    #[test]
    fn nvidia_smi_lines_become_the_query_subcommand() {
        assert_eq!(
            run("gpuwatch --query-gpu=index --format=csv -i 0 -lms 500"),
            "gpuwatch query --query-gpu=index --format=csv --id 0 --loop-ms 500"
        );
        assert_eq!(run("gpuwatch -L"), "gpuwatch query -L");
        assert_eq!(
            run("gpuwatch --demo query -i 1 -L"),
            "gpuwatch --demo query --id 1 -L"
        );
    }

    #[test]
    fn other_command_lines_keep_i_as_the_interval() {
        assert_eq!(run("gpuwatch -i 2s --once"), "gpuwatch -i 2s --once");
        assert_eq!(run("gpuwatch serve -i 2s"), "gpuwatch serve -i 2s");
    }
}
