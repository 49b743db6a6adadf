
use builtin;
use str;

set edit:completion:arg-completer[meshcheck] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'meshcheck'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'meshcheck'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand validate 'Validate assets (files or folders) and print their reports'
            cand checks 'List the check catalog with the thresholds of a profile'
            cand profiles 'Show the built-in budget profiles side by side'
            cand render 'Render stills (and a turntable GIF) of one asset under the studio rig'
            cand inspect 'Ask a vision model about the renders (VIS-001, VIS-002, VIS-003)'
            cand generate 'Regenerate completions, man pages, schemas and docs/checks.md (for maintainers)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'meshcheck;validate'= {
            cand --format 'Output format [default: table on a terminal, json otherwise]'
            cand --output-dir 'Also write one NAME.report.json per input into DIR (mirroring subfolders)'
            cand --profile 'Budget profile: web, mobile, pc, hero, or a path to a .toml file'
            cand --override 'Replace one budget (repeatable): max_tris, max_verts, max_texture_dim, max_texture_mem, max_materials, max_draw_calls, max_file_bytes, min_extent, max_extent'
            cand --weld-tolerance 'Weld tolerance for geometry checks, in metres [default: the profile''s, 1e-5]'
            cand --only 'Run only these checks or families (IDs such as PERF-001, or PERF, or performance)'
            cand --skip 'Skip these checks or families; they report `skipped` ("not selected")'
            cand --fail-on 'Exit 1 on this verdict or worse'
            cand --mode 'checks_only, or full (needs the renderer)'
            cand --validator-timeout 'Seconds the glTF-Validator may spend on one file before SPEC-001 is skipped with "validator timed out"'
            cand -j 'Files validated in parallel [default: all cores]'
            cand --jobs 'Files validated in parallel [default: all cores]'
            cand --watermark 'With --mode full: stamp this text on the stills'
            cand --screenshots 'With --mode full: write the six standard stills next to the report (into --output-dir, or NAME-screenshots/ in the current directory) and list them under `screenshots`'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'meshcheck;checks'= {
            cand --profile 'Show thresholds under this profile (a name or a .toml path)'
            cand --format 'Output format [default: table on a terminal, json otherwise]'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'meshcheck;profiles'= {
            cand --format 'Output format [default: table on a terminal, json otherwise]'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'meshcheck;render'= {
            cand --angles 'Views as JSON, e.g. ''[{"rv":30,"rh":45}]'': rv elevation -90..90, rh azimuth 0..360 around +Y from the front; at most 12 [default: the six standard views front, right, back, left, top, three_quarter]'
            cand --size 'Width and height of each still, 128 to 1024'
            cand --background 'Background: ''#RRGGBB'' or transparent'
            cand --lighting 'Lighting rig'
            cand --turntable 'Also render a turntable GIF, e.g. ''{"frames":36,"format":"gif","size":512}'' (frames 8..120, default 36; size 128..1024, default 512; gif only)'
            cand --out 'Folder for the PNGs and turntable.gif [default: FILE-STEM-render]'
            cand --watermark 'Stamp this text on the stills'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'meshcheck;inspect'= {
            cand --check 'VIS-001 (prompt match; needs --prompt), VIS-002 (texture artifacts) or VIS-003 (freeform; needs --question)'
            cand --prompt 'What the asset should be (VIS-001), e.g. "a red office chair"'
            cand --question 'The question (VIS-003)'
            cand --render-dir 'Reuse the stills `meshcheck render` wrote into DIR instead of rendering'
            cand --timeout 'Seconds to wait for the model [default: MESHCHECK_VISION_TIMEOUT or 60]'
            cand --no-response-format 'Do not ask for `response_format: json_schema` (providers without structured output); the reply is checked against the schema anyway'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'meshcheck;generate'= {
            cand --dir 'The repository root to write into'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'meshcheck;help'= {
            cand validate 'Validate assets (files or folders) and print their reports'
            cand checks 'List the check catalog with the thresholds of a profile'
            cand profiles 'Show the built-in budget profiles side by side'
            cand render 'Render stills (and a turntable GIF) of one asset under the studio rig'
            cand inspect 'Ask a vision model about the renders (VIS-001, VIS-002, VIS-003)'
            cand generate 'Regenerate completions, man pages, schemas and docs/checks.md (for maintainers)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'meshcheck;help;validate'= {
        }
        &'meshcheck;help;checks'= {
        }
        &'meshcheck;help;profiles'= {
        }
        &'meshcheck;help;render'= {
        }
        &'meshcheck;help;inspect'= {
        }
        &'meshcheck;help;generate'= {
        }
        &'meshcheck;help;help'= {
        }
    ]
    $completions[$command]
}
