
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'meshcheck' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'meshcheck'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'meshcheck' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('validate', 'validate', [CompletionResultType]::ParameterValue, 'Validate assets (files or folders) and print their reports')
            [CompletionResult]::new('compare', 'compare', [CompletionResultType]::ParameterValue, 'Compare two assets or two reports: status changes and deltas; exit 1 when NEW is worse')
            [CompletionResult]::new('checks', 'checks', [CompletionResultType]::ParameterValue, 'List the check catalog with the thresholds of a profile')
            [CompletionResult]::new('profiles', 'profiles', [CompletionResultType]::ParameterValue, 'Show the built-in budget profiles side by side')
            [CompletionResult]::new('config', 'config', [CompletionResultType]::ParameterValue, 'Show the settings a file gets from meshcheck.toml and the flags, and where each came from')
            [CompletionResult]::new('render', 'render', [CompletionResultType]::ParameterValue, 'Render stills (and a turntable GIF) of one asset under the studio rig')
            [CompletionResult]::new('inspect', 'inspect', [CompletionResultType]::ParameterValue, 'Ask a vision model about the renders (VIS-001, VIS-002, VIS-003)')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Run the /v1 HTTP API (accounts, credits, uploads, jobs, webhooks)')
            [CompletionResult]::new('accounts', 'accounts', [CompletionResultType]::ParameterValue, 'Create and list service accounts (in the server''s data folder)')
            [CompletionResult]::new('keys', 'keys', [CompletionResultType]::ParameterValue, 'Create and revoke API keys of service accounts')
            [CompletionResult]::new('mcp', 'mcp', [CompletionResultType]::ParameterValue, 'Serve meshcheck''s tools to agents over MCP on stdio (docs/mcp.md)')
            [CompletionResult]::new('generate', 'generate', [CompletionResultType]::ParameterValue, 'Regenerate completions, man pages, schemas and docs/checks.md (for maintainers)')
            [CompletionResult]::new('render-worker', 'render-worker', [CompletionResultType]::ParameterValue, 'Draw stills over stdin and stdout (started by `meshcheck serve`, and by `meshcheck validate --mode full` for more than one file)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'meshcheck;validate' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format [default: table on a terminal, json otherwise]')
            [CompletionResult]::new('--output-dir', '--output-dir', [CompletionResultType]::ParameterName, 'Also write one NAME.report.json per input into DIR (mirroring subfolders)')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Budget profile: web, mobile, pc, hero, or a path to a .toml file [default: meshcheck.toml''s, else web]')
            [CompletionResult]::new('--override', '--override', [CompletionResultType]::ParameterName, 'Replace one budget (repeatable): max_tris, max_verts, max_texture_dim, max_texture_mem, max_materials, max_draw_calls, max_file_bytes, min_extent, max_extent')
            [CompletionResult]::new('--weld-tolerance', '--weld-tolerance', [CompletionResultType]::ParameterName, 'Weld tolerance for geometry checks, in metres [default: the profile''s, 1e-5]')
            [CompletionResult]::new('--only', '--only', [CompletionResultType]::ParameterName, 'Run only these checks or families (IDs such as PERF-001, or PERF, or performance)')
            [CompletionResult]::new('--skip', '--skip', [CompletionResultType]::ParameterName, 'Skip these checks or families; they report `skipped` ("not selected")')
            [CompletionResult]::new('--mode', '--mode', [CompletionResultType]::ParameterName, 'checks_only, or full (needs the renderer) [default: meshcheck.toml''s, else checks_only]')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Read the settings of every input from this file instead of the meshcheck.toml found above each input (docs/config.md)')
            [CompletionResult]::new('--fail-on', '--fail-on', [CompletionResultType]::ParameterName, 'Exit 1 on this verdict or worse [default: meshcheck.toml''s, else fail]')
            [CompletionResult]::new('--baseline', '--baseline', [CompletionResultType]::ParameterName, 'Findings recorded in FILE (by --write-baseline) are accepted: still reported and marked, they no longer fail the run; new ones do')
            [CompletionResult]::new('--write-baseline', '--write-baseline', [CompletionResultType]::ParameterName, 'Record this run''s findings in FILE as the accepted baseline (exit 0 unless --baseline is given too)')
            [CompletionResult]::new('--validator-timeout', '--validator-timeout', [CompletionResultType]::ParameterName, 'Seconds the glTF-Validator may spend on one file before SPEC-001 is skipped with "validator timed out"')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'Files validated in parallel [default: all cores]')
            [CompletionResult]::new('--jobs', '--jobs', [CompletionResultType]::ParameterName, 'Files validated in parallel [default: all cores]')
            [CompletionResult]::new('--watermark', '--watermark', [CompletionResultType]::ParameterName, 'With --mode full: stamp this text on the stills')
            [CompletionResult]::new('--turntable', '--turntable', [CompletionResultType]::ParameterName, 'With --format html and --mode full: also a turntable GIF per file; `--turntable=''{"frames":36,"size":512}''` sets frames (8..120) and size (128..1024) [default: 36 frames of 256 px]')
            [CompletionResult]::new('--no-config', '--no-config', [CompletionResultType]::ParameterName, 'Read no meshcheck.toml: defaults and flags only')
            [CompletionResult]::new('--screenshots', '--screenshots', [CompletionResultType]::ParameterName, 'With --mode full: write the six standard stills next to the report (into --output-dir, or NAME-screenshots/ in the current directory) and list them under `screenshots`')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'meshcheck;compare' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format [default: table on a terminal, json otherwise]')
            [CompletionResult]::new('--tolerance', '--tolerance', [CompletionResultType]::ParameterName, 'How much a budget figure (a check''s gauge value such as triangles or texture memory, or a stats count) may grow before NEW is worse, in % of OLD''s value')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Budget profile: web, mobile, pc, hero, or a path to a .toml file [default: meshcheck.toml''s, else web]')
            [CompletionResult]::new('--override', '--override', [CompletionResultType]::ParameterName, 'Replace one budget (repeatable): max_tris, max_verts, max_texture_dim, max_texture_mem, max_materials, max_draw_calls, max_file_bytes, min_extent, max_extent')
            [CompletionResult]::new('--weld-tolerance', '--weld-tolerance', [CompletionResultType]::ParameterName, 'Weld tolerance for geometry checks, in metres [default: the profile''s, 1e-5]')
            [CompletionResult]::new('--only', '--only', [CompletionResultType]::ParameterName, 'Run only these checks or families (IDs such as PERF-001, or PERF, or performance)')
            [CompletionResult]::new('--skip', '--skip', [CompletionResultType]::ParameterName, 'Skip these checks or families; they report `skipped` ("not selected")')
            [CompletionResult]::new('--mode', '--mode', [CompletionResultType]::ParameterName, 'checks_only, or full (needs the renderer) [default: meshcheck.toml''s, else checks_only]')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Read the settings of every input from this file instead of the meshcheck.toml found above each input (docs/config.md)')
            [CompletionResult]::new('--validator-timeout', '--validator-timeout', [CompletionResultType]::ParameterName, 'Seconds the glTF-Validator may spend on one file')
            [CompletionResult]::new('--no-config', '--no-config', [CompletionResultType]::ParameterName, 'Read no meshcheck.toml: defaults and flags only')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'meshcheck;checks' {
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Show thresholds under this profile (a name or a .toml path)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format [default: table on a terminal, json otherwise]')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'meshcheck;profiles' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format [default: table on a terminal, json otherwise]')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'meshcheck;config' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format [default: table on a terminal, json otherwise]')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Budget profile: web, mobile, pc, hero, or a path to a .toml file [default: meshcheck.toml''s, else web]')
            [CompletionResult]::new('--override', '--override', [CompletionResultType]::ParameterName, 'Replace one budget (repeatable): max_tris, max_verts, max_texture_dim, max_texture_mem, max_materials, max_draw_calls, max_file_bytes, min_extent, max_extent')
            [CompletionResult]::new('--weld-tolerance', '--weld-tolerance', [CompletionResultType]::ParameterName, 'Weld tolerance for geometry checks, in metres [default: the profile''s, 1e-5]')
            [CompletionResult]::new('--only', '--only', [CompletionResultType]::ParameterName, 'Run only these checks or families (IDs such as PERF-001, or PERF, or performance)')
            [CompletionResult]::new('--skip', '--skip', [CompletionResultType]::ParameterName, 'Skip these checks or families; they report `skipped` ("not selected")')
            [CompletionResult]::new('--mode', '--mode', [CompletionResultType]::ParameterName, 'checks_only, or full (needs the renderer) [default: meshcheck.toml''s, else checks_only]')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Read the settings of every input from this file instead of the meshcheck.toml found above each input (docs/config.md)')
            [CompletionResult]::new('--fail-on', '--fail-on', [CompletionResultType]::ParameterName, 'Exit 1 on this verdict or worse [default: meshcheck.toml''s, else fail]')
            [CompletionResult]::new('--no-config', '--no-config', [CompletionResultType]::ParameterName, 'Read no meshcheck.toml: defaults and flags only')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'meshcheck;render' {
            [CompletionResult]::new('--angles', '--angles', [CompletionResultType]::ParameterName, 'Views as JSON, e.g. ''[{"rv":30,"rh":45}]'': rv elevation -90..90, rh azimuth 0..360 around +Y from the front; at most 12 [default: the six standard views front, right, back, left, top, three_quarter]')
            [CompletionResult]::new('--size', '--size', [CompletionResultType]::ParameterName, 'Width and height of each still, 128 to 1024')
            [CompletionResult]::new('--background', '--background', [CompletionResultType]::ParameterName, 'Background: ''#RRGGBB'' or transparent')
            [CompletionResult]::new('--lighting', '--lighting', [CompletionResultType]::ParameterName, 'Lighting rig')
            [CompletionResult]::new('--turntable', '--turntable', [CompletionResultType]::ParameterName, 'Also render a turntable GIF, e.g. ''{"frames":36,"format":"gif","size":512}'' (frames 8..120, default 36; size 128..1024, default 512; gif only)')
            [CompletionResult]::new('--out', '--out', [CompletionResultType]::ParameterName, 'Folder for the PNGs and turntable.gif [default: FILE-STEM-render]')
            [CompletionResult]::new('--watermark', '--watermark', [CompletionResultType]::ParameterName, 'Stamp this text on the stills')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'meshcheck;inspect' {
            [CompletionResult]::new('--check', '--check', [CompletionResultType]::ParameterName, 'VIS-001 (prompt match; needs --prompt), VIS-002 (texture artifacts) or VIS-003 (freeform; needs --question)')
            [CompletionResult]::new('--prompt', '--prompt', [CompletionResultType]::ParameterName, 'What the asset should be (VIS-001), e.g. "a red office chair"')
            [CompletionResult]::new('--question', '--question', [CompletionResultType]::ParameterName, 'The question (VIS-003)')
            [CompletionResult]::new('--render-dir', '--render-dir', [CompletionResultType]::ParameterName, 'Reuse the stills `meshcheck render` wrote into DIR instead of rendering')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Seconds to wait for the model [default: MESHCHECK_VISION_TIMEOUT or 60]')
            [CompletionResult]::new('--no-response-format', '--no-response-format', [CompletionResultType]::ParameterName, 'Do not ask for `response_format: json_schema` (providers without structured output); the reply is checked against the schema anyway')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'meshcheck;serve' {
            [CompletionResult]::new('--addr', '--addr', [CompletionResultType]::ParameterName, 'Address to listen on [default: 127.0.0.1:8080]')
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'Folder for the database and the transient blobs [default: ./meshcheck-data]')
            [CompletionResult]::new('--blob-store', '--blob-store', [CompletionResultType]::ParameterName, 'Where upload and job bytes and stored stills live: file://DIR (folders DIR/blobs and DIR/screenshots) or s3://BUCKET[/PREFIX] (an S3-compatible bucket, configured by the AWS_* environment variables; docs/blob-store.md) [default: file://DATA_DIR]')
            [CompletionResult]::new('--base-url', '--base-url', [CompletionResultType]::ParameterName, 'Public base URL, used in upload URLs [default: http://ADDR]')
            [CompletionResult]::new('--fetch-allow-hosts', '--fetch-allow-hosts', [CompletionResultType]::ParameterName, 'Fetch `url` inputs only from these hosts (comma-separated; every redirect hop is checked). An empty value turns url fetching off')
            [CompletionResult]::new('--workers', '--workers', [CompletionResultType]::ParameterName, 'Job workers [default: the number of cores]')
            [CompletionResult]::new('--render-workers', '--render-workers', [CompletionResultType]::ParameterName, 'Render worker processes that may draw at once, each replaced on its own every 50 renders or at 1 GB; each gets LP_NUM_THREADS = cores / N [default: one per two cores, at least 1]')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Log format [default: text]')
            [CompletionResult]::new('--metrics-addr', '--metrics-addr', [CompletionResultType]::ParameterName, 'Serve Prometheus metrics (GET /metrics) on this separate admin address, never on the public one; keep it private [default: none, no metrics listener]')
            [CompletionResult]::new('--database', '--database', [CompletionResultType]::ParameterName, 'The database: sqlite:PATH, or postgres://USER:PASSWORD@HOST:PORT/DB for several nodes on one database [default: DATA_DIR/meshcheck.sqlite]')
            [CompletionResult]::new('--job-lease', '--job-lease', [CompletionResultType]::ParameterName, 'Seconds a claimed job stays this node''s without a renewal (renewed every third of it); another node takes the job over once it runs out [default: 30]')
            [CompletionResult]::new('--allow-private-targets', '--allow-private-targets', [CompletionResultType]::ParameterName, 'Let `url` fetches and webhooks reach loopback and private addresses (tests and closed networks only; logged as a warning)')
            [CompletionResult]::new('--no-rate-limits', '--no-rate-limits', [CompletionResultType]::ParameterName, 'Turn the per-key and per-IP request limits off (a private deployment behind a gateway that limits, or conformance runs; credits still apply; logged as a warning)')
            [CompletionResult]::new('--render-in-process', '--render-in-process', [CompletionResultType]::ParameterName, 'Draw stills in the server process instead of a worker process that is replaced every 50 renders or at 1 GB (for GPU drivers that do not leak; Mesa''s lavapipe does)')
            [CompletionResult]::new('--no-janitor', '--no-janitor', [CompletionResultType]::ParameterName, 'Never run the scheduled work (retention, expired uploads, ran-out leases, orphaned blobs) on this node; with a shared database one node at a time runs it anyway')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'meshcheck;accounts' {
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'The server''s data folder [default: ./meshcheck-data]')
            [CompletionResult]::new('--database', '--database', [CompletionResultType]::ParameterName, 'The server''s database, as given to `serve --database` [default: DATA_DIR/meshcheck.sqlite]')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create an account and print its first API key (shown once)')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List accounts with their plan, balance and keys (prefixes only)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'meshcheck;accounts;create' {
            [CompletionResult]::new('--plan', '--plan', [CompletionResultType]::ParameterName, 'Plan: free, indie, studio or scale')
            [CompletionResult]::new('--email', '--email', [CompletionResultType]::ParameterName, 'Contact address')
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'The server''s data folder [default: ./meshcheck-data]')
            [CompletionResult]::new('--database', '--database', [CompletionResultType]::ParameterName, 'The server''s database, as given to `serve --database` [default: DATA_DIR/meshcheck.sqlite]')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print JSON (`account_id`, `api_key`, `plan`) instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'meshcheck;accounts;list' {
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'The server''s data folder [default: ./meshcheck-data]')
            [CompletionResult]::new('--database', '--database', [CompletionResultType]::ParameterName, 'The server''s database, as given to `serve --database` [default: DATA_DIR/meshcheck.sqlite]')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'meshcheck;accounts;help' {
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create an account and print its first API key (shown once)')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List accounts with their plan, balance and keys (prefixes only)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'meshcheck;accounts;help;create' {
            break
        }
        'meshcheck;accounts;help;list' {
            break
        }
        'meshcheck;accounts;help;help' {
            break
        }
        'meshcheck;keys' {
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'The server''s data folder [default: ./meshcheck-data]')
            [CompletionResult]::new('--database', '--database', [CompletionResultType]::ParameterName, 'The server''s database, as given to `serve --database` [default: DATA_DIR/meshcheck.sqlite]')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Make another key for an account and print it (shown once)')
            [CompletionResult]::new('revoke', 'revoke', [CompletionResultType]::ParameterValue, 'Revoke a key, given in full or by its first 12 characters')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'meshcheck;keys;create' {
            [CompletionResult]::new('--account', '--account', [CompletionResultType]::ParameterName, 'The account (acct_...)')
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'The server''s data folder [default: ./meshcheck-data]')
            [CompletionResult]::new('--database', '--database', [CompletionResultType]::ParameterName, 'The server''s database, as given to `serve --database` [default: DATA_DIR/meshcheck.sqlite]')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'meshcheck;keys;revoke' {
            [CompletionResult]::new('--data-dir', '--data-dir', [CompletionResultType]::ParameterName, 'The server''s data folder [default: ./meshcheck-data]')
            [CompletionResult]::new('--database', '--database', [CompletionResultType]::ParameterName, 'The server''s database, as given to `serve --database` [default: DATA_DIR/meshcheck.sqlite]')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'meshcheck;keys;help' {
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Make another key for an account and print it (shown once)')
            [CompletionResult]::new('revoke', 'revoke', [CompletionResultType]::ParameterValue, 'Revoke a key, given in full or by its first 12 characters')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'meshcheck;keys;help;create' {
            break
        }
        'meshcheck;keys;help;revoke' {
            break
        }
        'meshcheck;keys;help;help' {
            break
        }
        'meshcheck;mcp' {
            [CompletionResult]::new('--dir', '--dir', [CompletionResultType]::ParameterName, 'Folder that relative paths in tool calls resolve against [default: the current directory]')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'meshcheck;generate' {
            [CompletionResult]::new('--dir', '--dir', [CompletionResultType]::ParameterName, 'The repository root to write into')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'meshcheck;render-worker' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'meshcheck;help' {
            [CompletionResult]::new('validate', 'validate', [CompletionResultType]::ParameterValue, 'Validate assets (files or folders) and print their reports')
            [CompletionResult]::new('compare', 'compare', [CompletionResultType]::ParameterValue, 'Compare two assets or two reports: status changes and deltas; exit 1 when NEW is worse')
            [CompletionResult]::new('checks', 'checks', [CompletionResultType]::ParameterValue, 'List the check catalog with the thresholds of a profile')
            [CompletionResult]::new('profiles', 'profiles', [CompletionResultType]::ParameterValue, 'Show the built-in budget profiles side by side')
            [CompletionResult]::new('config', 'config', [CompletionResultType]::ParameterValue, 'Show the settings a file gets from meshcheck.toml and the flags, and where each came from')
            [CompletionResult]::new('render', 'render', [CompletionResultType]::ParameterValue, 'Render stills (and a turntable GIF) of one asset under the studio rig')
            [CompletionResult]::new('inspect', 'inspect', [CompletionResultType]::ParameterValue, 'Ask a vision model about the renders (VIS-001, VIS-002, VIS-003)')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Run the /v1 HTTP API (accounts, credits, uploads, jobs, webhooks)')
            [CompletionResult]::new('accounts', 'accounts', [CompletionResultType]::ParameterValue, 'Create and list service accounts (in the server''s data folder)')
            [CompletionResult]::new('keys', 'keys', [CompletionResultType]::ParameterValue, 'Create and revoke API keys of service accounts')
            [CompletionResult]::new('mcp', 'mcp', [CompletionResultType]::ParameterValue, 'Serve meshcheck''s tools to agents over MCP on stdio (docs/mcp.md)')
            [CompletionResult]::new('generate', 'generate', [CompletionResultType]::ParameterValue, 'Regenerate completions, man pages, schemas and docs/checks.md (for maintainers)')
            [CompletionResult]::new('render-worker', 'render-worker', [CompletionResultType]::ParameterValue, 'Draw stills over stdin and stdout (started by `meshcheck serve`, and by `meshcheck validate --mode full` for more than one file)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'meshcheck;help;validate' {
            break
        }
        'meshcheck;help;compare' {
            break
        }
        'meshcheck;help;checks' {
            break
        }
        'meshcheck;help;profiles' {
            break
        }
        'meshcheck;help;config' {
            break
        }
        'meshcheck;help;render' {
            break
        }
        'meshcheck;help;inspect' {
            break
        }
        'meshcheck;help;serve' {
            break
        }
        'meshcheck;help;accounts' {
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Create an account and print its first API key (shown once)')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List accounts with their plan, balance and keys (prefixes only)')
            break
        }
        'meshcheck;help;accounts;create' {
            break
        }
        'meshcheck;help;accounts;list' {
            break
        }
        'meshcheck;help;keys' {
            [CompletionResult]::new('create', 'create', [CompletionResultType]::ParameterValue, 'Make another key for an account and print it (shown once)')
            [CompletionResult]::new('revoke', 'revoke', [CompletionResultType]::ParameterValue, 'Revoke a key, given in full or by its first 12 characters')
            break
        }
        'meshcheck;help;keys;create' {
            break
        }
        'meshcheck;help;keys;revoke' {
            break
        }
        'meshcheck;help;mcp' {
            break
        }
        'meshcheck;help;generate' {
            break
        }
        'meshcheck;help;render-worker' {
            break
        }
        'meshcheck;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
