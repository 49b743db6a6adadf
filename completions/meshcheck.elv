
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
            cand compare 'Compare two assets or two reports: status changes and deltas; exit 1 when NEW is worse'
            cand checks 'List the check catalog with the thresholds of a profile'
            cand profiles 'Show the built-in budget profiles side by side'
            cand config 'Show the settings a file gets from meshcheck.toml and the flags, and where each came from'
            cand render 'Render stills (and a turntable GIF) of one asset under the studio rig'
            cand inspect 'Ask a vision model about the renders (VIS-001, VIS-002, VIS-003)'
            cand serve 'Run the /v1 HTTP API (accounts, credits, uploads, jobs, webhooks)'
            cand accounts 'Create and list service accounts (in the server''s data folder)'
            cand keys 'Create and revoke API keys of service accounts'
            cand mcp 'Serve meshcheck''s tools to agents over MCP on stdio (docs/mcp.md)'
            cand generate 'Regenerate completions, man pages, schemas and docs/checks.md (for maintainers)'
            cand render-worker 'Draw stills over stdin and stdout (started by `meshcheck serve`, and by `meshcheck validate --mode full` for more than one file)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'meshcheck;validate'= {
            cand --format 'Output format [default: table on a terminal, json otherwise]'
            cand --output-dir 'Also write one NAME.report.json per input into DIR (mirroring subfolders)'
            cand --profile 'Budget profile: web, mobile, pc, hero, or a path to a .toml file [default: meshcheck.toml''s, else web]'
            cand --override 'Replace one budget (repeatable): max_tris, max_verts, max_texture_dim, max_texture_mem, max_materials, max_draw_calls, max_file_bytes, min_extent, max_extent'
            cand --weld-tolerance 'Weld tolerance for geometry checks, in metres [default: the profile''s, 1e-5]'
            cand --only 'Run only these checks or families (IDs such as PERF-001, or PERF, or performance)'
            cand --skip 'Skip these checks or families; they report `skipped` ("not selected")'
            cand --mode 'checks_only, or full (needs the renderer) [default: meshcheck.toml''s, else checks_only]'
            cand --config 'Read the settings of every input from this file instead of the meshcheck.toml found above each input (docs/config.md)'
            cand --fail-on 'Exit 1 on this verdict or worse [default: meshcheck.toml''s, else fail]'
            cand --baseline 'Findings recorded in FILE (by --write-baseline) are accepted: still reported and marked, they no longer fail the run; new ones do'
            cand --write-baseline 'Record this run''s findings in FILE as the accepted baseline (exit 0 unless --baseline is given too)'
            cand --validator-timeout 'Seconds the glTF-Validator may spend on one file before SPEC-001 is skipped with "validator timed out"'
            cand -j 'Files validated in parallel [default: all cores]'
            cand --jobs 'Files validated in parallel [default: all cores]'
            cand --watermark 'With --mode full: stamp this text on the stills'
            cand --turntable 'With --format html and --mode full: also a turntable GIF per file; `--turntable=''{"frames":36,"size":512}''` sets frames (8..120) and size (128..1024) [default: 36 frames of 256 px]'
            cand --no-config 'Read no meshcheck.toml: defaults and flags only'
            cand --screenshots 'With --mode full: write the six standard stills next to the report (into --output-dir, or NAME-screenshots/ in the current directory) and list them under `screenshots`'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'meshcheck;compare'= {
            cand --format 'Output format [default: table on a terminal, json otherwise]'
            cand --tolerance 'How much a budget figure (a check''s gauge value such as triangles or texture memory, or a stats count) may grow before NEW is worse, in % of OLD''s value'
            cand --profile 'Budget profile: web, mobile, pc, hero, or a path to a .toml file [default: meshcheck.toml''s, else web]'
            cand --override 'Replace one budget (repeatable): max_tris, max_verts, max_texture_dim, max_texture_mem, max_materials, max_draw_calls, max_file_bytes, min_extent, max_extent'
            cand --weld-tolerance 'Weld tolerance for geometry checks, in metres [default: the profile''s, 1e-5]'
            cand --only 'Run only these checks or families (IDs such as PERF-001, or PERF, or performance)'
            cand --skip 'Skip these checks or families; they report `skipped` ("not selected")'
            cand --mode 'checks_only, or full (needs the renderer) [default: meshcheck.toml''s, else checks_only]'
            cand --config 'Read the settings of every input from this file instead of the meshcheck.toml found above each input (docs/config.md)'
            cand --validator-timeout 'Seconds the glTF-Validator may spend on one file'
            cand --no-config 'Read no meshcheck.toml: defaults and flags only'
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
        &'meshcheck;config'= {
            cand --format 'Output format [default: table on a terminal, json otherwise]'
            cand --profile 'Budget profile: web, mobile, pc, hero, or a path to a .toml file [default: meshcheck.toml''s, else web]'
            cand --override 'Replace one budget (repeatable): max_tris, max_verts, max_texture_dim, max_texture_mem, max_materials, max_draw_calls, max_file_bytes, min_extent, max_extent'
            cand --weld-tolerance 'Weld tolerance for geometry checks, in metres [default: the profile''s, 1e-5]'
            cand --only 'Run only these checks or families (IDs such as PERF-001, or PERF, or performance)'
            cand --skip 'Skip these checks or families; they report `skipped` ("not selected")'
            cand --mode 'checks_only, or full (needs the renderer) [default: meshcheck.toml''s, else checks_only]'
            cand --config 'Read the settings of every input from this file instead of the meshcheck.toml found above each input (docs/config.md)'
            cand --fail-on 'Exit 1 on this verdict or worse [default: meshcheck.toml''s, else fail]'
            cand --no-config 'Read no meshcheck.toml: defaults and flags only'
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
        &'meshcheck;serve'= {
            cand --addr 'Address to listen on [default: 127.0.0.1:8080]'
            cand --data-dir 'Folder for the database and the transient blobs [default: ./meshcheck-data]'
            cand --blob-store 'Where upload and job bytes and stored stills live: file://DIR (folders DIR/blobs and DIR/screenshots) or s3://BUCKET[/PREFIX] (an S3-compatible bucket, configured by the AWS_* environment variables; docs/blob-store.md) [default: file://DATA_DIR]'
            cand --base-url 'Public base URL, used in upload URLs [default: http://ADDR]'
            cand --fetch-allow-hosts 'Fetch `url` inputs only from these hosts (comma-separated; every redirect hop is checked). An empty value turns url fetching off'
            cand --workers 'Job workers [default: the number of cores]'
            cand --render-workers 'Render worker processes that may draw at once, each replaced on its own every 50 renders or at 1 GB; each gets LP_NUM_THREADS = cores / N [default: one per two cores, at least 1]'
            cand --log-format 'Log format [default: text]'
            cand --metrics-addr 'Serve Prometheus metrics (GET /metrics) on this separate admin address, never on the public one; keep it private [default: none, no metrics listener]'
            cand --database 'The database: sqlite:PATH, or postgres://USER:PASSWORD@HOST:PORT/DB for several nodes on one database [default: DATA_DIR/meshcheck.sqlite]'
            cand --job-lease 'Seconds a claimed job stays this node''s without a renewal (renewed every third of it); another node takes the job over once it runs out [default: 30]'
            cand --allow-private-targets 'Let `url` fetches and webhooks reach loopback and private addresses (tests and closed networks only; logged as a warning)'
            cand --no-rate-limits 'Turn the per-key and per-IP request limits off (a private deployment behind a gateway that limits, or conformance runs; credits still apply; logged as a warning)'
            cand --render-in-process 'Draw stills in the server process instead of a worker process that is replaced every 50 renders or at 1 GB (for GPU drivers that do not leak; Mesa''s lavapipe does)'
            cand --no-janitor 'Never run the scheduled work (retention, expired uploads, ran-out leases, orphaned blobs) on this node; with a shared database one node at a time runs it anyway'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'meshcheck;accounts'= {
            cand --data-dir 'The server''s data folder [default: ./meshcheck-data]'
            cand --database 'The server''s database, as given to `serve --database` [default: DATA_DIR/meshcheck.sqlite]'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand create 'Create an account and print its first API key (shown once)'
            cand list 'List accounts with their plan, balance and keys (prefixes only)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'meshcheck;accounts;create'= {
            cand --plan 'Plan: free, indie, studio or scale'
            cand --email 'Contact address'
            cand --data-dir 'The server''s data folder [default: ./meshcheck-data]'
            cand --database 'The server''s database, as given to `serve --database` [default: DATA_DIR/meshcheck.sqlite]'
            cand --json 'Print JSON (`account_id`, `api_key`, `plan`) instead of text'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'meshcheck;accounts;list'= {
            cand --data-dir 'The server''s data folder [default: ./meshcheck-data]'
            cand --database 'The server''s database, as given to `serve --database` [default: DATA_DIR/meshcheck.sqlite]'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'meshcheck;accounts;help'= {
            cand create 'Create an account and print its first API key (shown once)'
            cand list 'List accounts with their plan, balance and keys (prefixes only)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'meshcheck;accounts;help;create'= {
        }
        &'meshcheck;accounts;help;list'= {
        }
        &'meshcheck;accounts;help;help'= {
        }
        &'meshcheck;keys'= {
            cand --data-dir 'The server''s data folder [default: ./meshcheck-data]'
            cand --database 'The server''s database, as given to `serve --database` [default: DATA_DIR/meshcheck.sqlite]'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand create 'Make another key for an account and print it (shown once)'
            cand revoke 'Revoke a key, given in full or by its first 12 characters'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'meshcheck;keys;create'= {
            cand --account 'The account (acct_...)'
            cand --data-dir 'The server''s data folder [default: ./meshcheck-data]'
            cand --database 'The server''s database, as given to `serve --database` [default: DATA_DIR/meshcheck.sqlite]'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'meshcheck;keys;revoke'= {
            cand --data-dir 'The server''s data folder [default: ./meshcheck-data]'
            cand --database 'The server''s database, as given to `serve --database` [default: DATA_DIR/meshcheck.sqlite]'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'meshcheck;keys;help'= {
            cand create 'Make another key for an account and print it (shown once)'
            cand revoke 'Revoke a key, given in full or by its first 12 characters'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'meshcheck;keys;help;create'= {
        }
        &'meshcheck;keys;help;revoke'= {
        }
        &'meshcheck;keys;help;help'= {
        }
        &'meshcheck;mcp'= {
            cand --dir 'Folder that relative paths in tool calls resolve against [default: the current directory]'
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
        &'meshcheck;render-worker'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'meshcheck;help'= {
            cand validate 'Validate assets (files or folders) and print their reports'
            cand compare 'Compare two assets or two reports: status changes and deltas; exit 1 when NEW is worse'
            cand checks 'List the check catalog with the thresholds of a profile'
            cand profiles 'Show the built-in budget profiles side by side'
            cand config 'Show the settings a file gets from meshcheck.toml and the flags, and where each came from'
            cand render 'Render stills (and a turntable GIF) of one asset under the studio rig'
            cand inspect 'Ask a vision model about the renders (VIS-001, VIS-002, VIS-003)'
            cand serve 'Run the /v1 HTTP API (accounts, credits, uploads, jobs, webhooks)'
            cand accounts 'Create and list service accounts (in the server''s data folder)'
            cand keys 'Create and revoke API keys of service accounts'
            cand mcp 'Serve meshcheck''s tools to agents over MCP on stdio (docs/mcp.md)'
            cand generate 'Regenerate completions, man pages, schemas and docs/checks.md (for maintainers)'
            cand render-worker 'Draw stills over stdin and stdout (started by `meshcheck serve`, and by `meshcheck validate --mode full` for more than one file)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'meshcheck;help;validate'= {
        }
        &'meshcheck;help;compare'= {
        }
        &'meshcheck;help;checks'= {
        }
        &'meshcheck;help;profiles'= {
        }
        &'meshcheck;help;config'= {
        }
        &'meshcheck;help;render'= {
        }
        &'meshcheck;help;inspect'= {
        }
        &'meshcheck;help;serve'= {
        }
        &'meshcheck;help;accounts'= {
            cand create 'Create an account and print its first API key (shown once)'
            cand list 'List accounts with their plan, balance and keys (prefixes only)'
        }
        &'meshcheck;help;accounts;create'= {
        }
        &'meshcheck;help;accounts;list'= {
        }
        &'meshcheck;help;keys'= {
            cand create 'Make another key for an account and print it (shown once)'
            cand revoke 'Revoke a key, given in full or by its first 12 characters'
        }
        &'meshcheck;help;keys;create'= {
        }
        &'meshcheck;help;keys;revoke'= {
        }
        &'meshcheck;help;mcp'= {
        }
        &'meshcheck;help;generate'= {
        }
        &'meshcheck;help;render-worker'= {
        }
        &'meshcheck;help;help'= {
        }
    ]
    $completions[$command]
}
