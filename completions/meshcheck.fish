# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_meshcheck_global_optspecs
    string join \n h/help V/version
end

function __fish_meshcheck_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_meshcheck_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_meshcheck_using_subcommand
    set -l cmd (__fish_meshcheck_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c meshcheck -n "__fish_meshcheck_needs_command" -s h -l help -d 'Print help'
complete -c meshcheck -n "__fish_meshcheck_needs_command" -s V -l version -d 'Print version'
complete -c meshcheck -n "__fish_meshcheck_needs_command" -f -a "validate" -d 'Validate assets (files or folders) and print their reports'
complete -c meshcheck -n "__fish_meshcheck_needs_command" -f -a "compare" -d 'Compare two assets or two reports: status changes and deltas; exit 1 when NEW is worse'
complete -c meshcheck -n "__fish_meshcheck_needs_command" -f -a "checks" -d 'List the check catalog with the thresholds of a profile'
complete -c meshcheck -n "__fish_meshcheck_needs_command" -f -a "profiles" -d 'Show the built-in budget profiles side by side'
complete -c meshcheck -n "__fish_meshcheck_needs_command" -f -a "config" -d 'Show the settings a file gets from meshcheck.toml and the flags, and where each came from'
complete -c meshcheck -n "__fish_meshcheck_needs_command" -f -a "render" -d 'Render stills (and a turntable GIF) of one asset under the studio rig'
complete -c meshcheck -n "__fish_meshcheck_needs_command" -f -a "inspect" -d 'Ask a vision model about the renders (VIS-001, VIS-002, VIS-003)'
complete -c meshcheck -n "__fish_meshcheck_needs_command" -f -a "serve" -d 'Run the /v1 HTTP API (accounts, credits, uploads, jobs, webhooks)'
complete -c meshcheck -n "__fish_meshcheck_needs_command" -f -a "accounts" -d 'Create and list service accounts (in the server\'s data folder)'
complete -c meshcheck -n "__fish_meshcheck_needs_command" -f -a "keys" -d 'Create and revoke API keys of service accounts'
complete -c meshcheck -n "__fish_meshcheck_needs_command" -f -a "mcp" -d 'Serve meshcheck\'s tools to agents over MCP on stdio (docs/mcp.md)'
complete -c meshcheck -n "__fish_meshcheck_needs_command" -f -a "generate" -d 'Regenerate completions, man pages, schemas and docs/checks.md (for maintainers)'
complete -c meshcheck -n "__fish_meshcheck_needs_command" -f -a "render-worker" -d 'Draw stills over stdin and stdout (started by `meshcheck serve`, and by `meshcheck validate --mode full` for more than one file)'
complete -c meshcheck -n "__fish_meshcheck_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -l format -d 'Output format [default: table on a terminal, json otherwise]' -r -f -a "table\t'A table per file, with a summary for folder runs (default on a terminal)'
json\t'The report JSON, exactly as the service returns it (default otherwise)'
junit\t'JUnit XML: one testcase per check per file'
sarif\t'SARIF 2.1.0: a rule per check, a result per finding (GitHub code scanning)'
github\t'GitHub Actions workflow commands (annotations), and a job summary in $GITHUB_STEP_SUMMARY when it is set'
gitlab\t'GitLab Code Quality JSON'
markdown\t'Markdown for a pull-request comment: verdicts, measured vs threshold'
html\t'One self-contained HTML report card (a folder: an index and a card per file); in full mode with the stills inline'"
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -l output-dir -d 'Also write one NAME.report.json per input into DIR (mirroring subfolders)' -r -F
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -l profile -d 'Budget profile: web, mobile, pc, hero, or a path to a .toml file [default: meshcheck.toml\'s, else web]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -l override -d 'Replace one budget (repeatable): max_tris, max_verts, max_texture_dim, max_texture_mem, max_materials, max_draw_calls, max_file_bytes, min_extent, max_extent' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -l weld-tolerance -d 'Weld tolerance for geometry checks, in metres [default: the profile\'s, 1e-5]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -l only -d 'Run only these checks or families (IDs such as PERF-001, or PERF, or performance)' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -l skip -d 'Skip these checks or families; they report `skipped` ("not selected")' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -l mode -d 'checks_only, or full (needs the renderer) [default: meshcheck.toml\'s, else checks_only]' -r -f -a "checks_only\t'Measurements only; RND checks are skipped'
full\t'Measurements plus the renderer'"
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -l config -d 'Read the settings of every input from this file instead of the meshcheck.toml found above each input (docs/config.md)' -r -F
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -l fail-on -d 'Exit 1 on this verdict or worse [default: meshcheck.toml\'s, else fail]' -r -f -a "fail\t'Exit 1 when a report\'s verdict is fail (the default)'
warn\t'Exit 1 when a report\'s verdict is warn or fail'"
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -l baseline -d 'Findings recorded in FILE (by --write-baseline) are accepted: still reported and marked, they no longer fail the run; new ones do' -r -F
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -l write-baseline -d 'Record this run\'s findings in FILE as the accepted baseline (exit 0 unless --baseline is given too)' -r -F
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -l validator-timeout -d 'Seconds the glTF-Validator may spend on one file before SPEC-001 is skipped with "validator timed out"' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -s j -l jobs -d 'Files validated in parallel [default: all cores]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -l watermark -d 'With --mode full: stamp this text on the stills' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -l turntable -d 'With --format html and --mode full: also a turntable GIF per file; `--turntable=\'{"frames":36,"size":512}\'` sets frames (8..120) and size (128..1024) [default: 36 frames of 256 px]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -l no-config -d 'Read no meshcheck.toml: defaults and flags only'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -l screenshots -d 'With --mode full: write the six standard stills next to the report (into --output-dir, or NAME-screenshots/ in the current directory) and list them under `screenshots`'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand validate" -s V -l version -d 'Print version'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand compare" -l format -d 'Output format [default: table on a terminal, json otherwise]' -r -f -a "table\t'Tables of status changes and deltas (default on a terminal)'
json\t'The comparison as JSON (default otherwise)'
markdown\t'Markdown, for a pull-request comment or a job summary'
html\t'One self-contained HTML page; with --mode full, the stills of both sides side by side with a per-view difference'"
complete -c meshcheck -n "__fish_meshcheck_using_subcommand compare" -l tolerance -d 'How much a budget figure (a check\'s gauge value such as triangles or texture memory, or a stats count) may grow before NEW is worse, in % of OLD\'s value' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand compare" -l profile -d 'Budget profile: web, mobile, pc, hero, or a path to a .toml file [default: meshcheck.toml\'s, else web]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand compare" -l override -d 'Replace one budget (repeatable): max_tris, max_verts, max_texture_dim, max_texture_mem, max_materials, max_draw_calls, max_file_bytes, min_extent, max_extent' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand compare" -l weld-tolerance -d 'Weld tolerance for geometry checks, in metres [default: the profile\'s, 1e-5]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand compare" -l only -d 'Run only these checks or families (IDs such as PERF-001, or PERF, or performance)' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand compare" -l skip -d 'Skip these checks or families; they report `skipped` ("not selected")' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand compare" -l mode -d 'checks_only, or full (needs the renderer) [default: meshcheck.toml\'s, else checks_only]' -r -f -a "checks_only\t'Measurements only; RND checks are skipped'
full\t'Measurements plus the renderer'"
complete -c meshcheck -n "__fish_meshcheck_using_subcommand compare" -l config -d 'Read the settings of every input from this file instead of the meshcheck.toml found above each input (docs/config.md)' -r -F
complete -c meshcheck -n "__fish_meshcheck_using_subcommand compare" -l validator-timeout -d 'Seconds the glTF-Validator may spend on one file' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand compare" -l no-config -d 'Read no meshcheck.toml: defaults and flags only'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand compare" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand compare" -s V -l version -d 'Print version'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand checks" -l profile -d 'Show thresholds under this profile (a name or a .toml path)' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand checks" -l format -d 'Output format [default: table on a terminal, json otherwise]' -r -f -a "table\t'A table'
json\t'JSON'"
complete -c meshcheck -n "__fish_meshcheck_using_subcommand checks" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand checks" -s V -l version -d 'Print version'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand profiles" -l format -d 'Output format [default: table on a terminal, json otherwise]' -r -f -a "table\t'A table'
json\t'JSON'"
complete -c meshcheck -n "__fish_meshcheck_using_subcommand profiles" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand profiles" -s V -l version -d 'Print version'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand config" -l format -d 'Output format [default: table on a terminal, json otherwise]' -r -f -a "table\t'A table'
json\t'JSON'"
complete -c meshcheck -n "__fish_meshcheck_using_subcommand config" -l profile -d 'Budget profile: web, mobile, pc, hero, or a path to a .toml file [default: meshcheck.toml\'s, else web]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand config" -l override -d 'Replace one budget (repeatable): max_tris, max_verts, max_texture_dim, max_texture_mem, max_materials, max_draw_calls, max_file_bytes, min_extent, max_extent' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand config" -l weld-tolerance -d 'Weld tolerance for geometry checks, in metres [default: the profile\'s, 1e-5]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand config" -l only -d 'Run only these checks or families (IDs such as PERF-001, or PERF, or performance)' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand config" -l skip -d 'Skip these checks or families; they report `skipped` ("not selected")' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand config" -l mode -d 'checks_only, or full (needs the renderer) [default: meshcheck.toml\'s, else checks_only]' -r -f -a "checks_only\t'Measurements only; RND checks are skipped'
full\t'Measurements plus the renderer'"
complete -c meshcheck -n "__fish_meshcheck_using_subcommand config" -l config -d 'Read the settings of every input from this file instead of the meshcheck.toml found above each input (docs/config.md)' -r -F
complete -c meshcheck -n "__fish_meshcheck_using_subcommand config" -l fail-on -d 'Exit 1 on this verdict or worse [default: meshcheck.toml\'s, else fail]' -r -f -a "fail\t'Exit 1 when a report\'s verdict is fail (the default)'
warn\t'Exit 1 when a report\'s verdict is warn or fail'"
complete -c meshcheck -n "__fish_meshcheck_using_subcommand config" -l no-config -d 'Read no meshcheck.toml: defaults and flags only'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand config" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand config" -s V -l version -d 'Print version'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand render" -l angles -d 'Views as JSON, e.g. \'[{"rv":30,"rh":45}]\': rv elevation -90..90, rh azimuth 0..360 around +Y from the front; at most 12 [default: the six standard views front, right, back, left, top, three_quarter]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand render" -l size -d 'Width and height of each still, 128 to 1024' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand render" -l background -d 'Background: \'#RRGGBB\' or transparent' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand render" -l lighting -d 'Lighting rig' -r -f -a "studio\t'Three-point studio lighting with a neutral ambient term'"
complete -c meshcheck -n "__fish_meshcheck_using_subcommand render" -l turntable -d 'Also render a turntable GIF, e.g. \'{"frames":36,"format":"gif","size":512}\' (frames 8..120, default 36; size 128..1024, default 512; gif only)' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand render" -l out -d 'Folder for the PNGs and turntable.gif [default: FILE-STEM-render]' -r -F
complete -c meshcheck -n "__fish_meshcheck_using_subcommand render" -l watermark -d 'Stamp this text on the stills' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand render" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand render" -s V -l version -d 'Print version'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand inspect" -l check -d 'VIS-001 (prompt match; needs --prompt), VIS-002 (texture artifacts) or VIS-003 (freeform; needs --question)' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand inspect" -l prompt -d 'What the asset should be (VIS-001), e.g. "a red office chair"' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand inspect" -l question -d 'The question (VIS-003)' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand inspect" -l render-dir -d 'Reuse the stills `meshcheck render` wrote into DIR instead of rendering' -r -F
complete -c meshcheck -n "__fish_meshcheck_using_subcommand inspect" -l timeout -d 'Seconds to wait for the model [default: MESHCHECK_VISION_TIMEOUT or 60]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand inspect" -l no-response-format -d 'Do not ask for `response_format: json_schema` (providers without structured output); the reply is checked against the schema anyway'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand inspect" -s h -l help -d 'Print help'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand inspect" -s V -l version -d 'Print version'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand serve" -l addr -d 'Address to listen on [default: 127.0.0.1:8080]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand serve" -l data-dir -d 'Folder for the database and the transient blobs [default: ./meshcheck-data]' -r -F
complete -c meshcheck -n "__fish_meshcheck_using_subcommand serve" -l blob-store -d 'Where upload and job bytes and stored stills live: file://DIR (folders DIR/blobs and DIR/screenshots) or s3://BUCKET[/PREFIX] (an S3-compatible bucket, configured by the AWS_* environment variables; docs/blob-store.md) [default: file://DATA_DIR]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand serve" -l base-url -d 'Public base URL, used in upload URLs [default: http://ADDR]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand serve" -l fetch-allow-hosts -d 'Fetch `url` inputs only from these hosts (comma-separated; every redirect hop is checked). An empty value turns url fetching off' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand serve" -l workers -d 'Job workers [default: the number of cores]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand serve" -l render-workers -d 'Render worker processes that may draw at once, each replaced on its own every 50 renders or at 1 GB; each gets LP_NUM_THREADS = cores / N [default: one per two cores, at least 1]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand serve" -l log-format -d 'Log format [default: text]' -r -f -a "text\t'One human-readable line per event'
json\t'One JSON object per event'"
complete -c meshcheck -n "__fish_meshcheck_using_subcommand serve" -l metrics-addr -d 'Serve Prometheus metrics (GET /metrics) on this separate admin address, never on the public one; keep it private [default: none, no metrics listener]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand serve" -l database -d 'The database: sqlite:PATH, or postgres://USER:PASSWORD@HOST:PORT/DB for several nodes on one database [default: DATA_DIR/meshcheck.sqlite]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand serve" -l job-lease -d 'Seconds a claimed job stays this node\'s without a renewal (renewed every third of it); another node takes the job over once it runs out [default: 30]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand serve" -l allow-private-targets -d 'Let `url` fetches and webhooks reach loopback and private addresses (tests and closed networks only; logged as a warning)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand serve" -l no-rate-limits -d 'Turn the per-key and per-IP request limits off (a private deployment behind a gateway that limits, or conformance runs; credits still apply; logged as a warning)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand serve" -l render-in-process -d 'Draw stills in the server process instead of a worker process that is replaced every 50 renders or at 1 GB (for GPU drivers that do not leak; Mesa\'s lavapipe does)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand serve" -l no-janitor -d 'Never run the scheduled work (retention, expired uploads, ran-out leases, orphaned blobs) on this node; with a shared database one node at a time runs it anyway'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand serve" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand serve" -s V -l version -d 'Print version'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and not __fish_seen_subcommand_from create list help" -l data-dir -d 'The server\'s data folder [default: ./meshcheck-data]' -r -F
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and not __fish_seen_subcommand_from create list help" -l database -d 'The server\'s database, as given to `serve --database` [default: DATA_DIR/meshcheck.sqlite]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and not __fish_seen_subcommand_from create list help" -s h -l help -d 'Print help'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and not __fish_seen_subcommand_from create list help" -s V -l version -d 'Print version'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and not __fish_seen_subcommand_from create list help" -f -a "create" -d 'Create an account and print its first API key (shown once)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and not __fish_seen_subcommand_from create list help" -f -a "list" -d 'List accounts with their plan, balance and keys (prefixes only)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and not __fish_seen_subcommand_from create list help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and __fish_seen_subcommand_from create" -l plan -d 'Plan: free, indie, studio or scale' -r -f -a "free\t''
indie\t''
studio\t''
scale\t''"
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and __fish_seen_subcommand_from create" -l email -d 'Contact address' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and __fish_seen_subcommand_from create" -l data-dir -d 'The server\'s data folder [default: ./meshcheck-data]' -r -F
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and __fish_seen_subcommand_from create" -l database -d 'The server\'s database, as given to `serve --database` [default: DATA_DIR/meshcheck.sqlite]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and __fish_seen_subcommand_from create" -l json -d 'Print JSON (`account_id`, `api_key`, `plan`) instead of text'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and __fish_seen_subcommand_from create" -s h -l help -d 'Print help'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and __fish_seen_subcommand_from create" -s V -l version -d 'Print version'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and __fish_seen_subcommand_from list" -l data-dir -d 'The server\'s data folder [default: ./meshcheck-data]' -r -F
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and __fish_seen_subcommand_from list" -l database -d 'The server\'s database, as given to `serve --database` [default: DATA_DIR/meshcheck.sqlite]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and __fish_seen_subcommand_from list" -s V -l version -d 'Print version'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and __fish_seen_subcommand_from help" -f -a "create" -d 'Create an account and print its first API key (shown once)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and __fish_seen_subcommand_from help" -f -a "list" -d 'List accounts with their plan, balance and keys (prefixes only)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand accounts; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand keys; and not __fish_seen_subcommand_from create revoke help" -l data-dir -d 'The server\'s data folder [default: ./meshcheck-data]' -r -F
complete -c meshcheck -n "__fish_meshcheck_using_subcommand keys; and not __fish_seen_subcommand_from create revoke help" -l database -d 'The server\'s database, as given to `serve --database` [default: DATA_DIR/meshcheck.sqlite]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand keys; and not __fish_seen_subcommand_from create revoke help" -s h -l help -d 'Print help'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand keys; and not __fish_seen_subcommand_from create revoke help" -s V -l version -d 'Print version'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand keys; and not __fish_seen_subcommand_from create revoke help" -f -a "create" -d 'Make another key for an account and print it (shown once)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand keys; and not __fish_seen_subcommand_from create revoke help" -f -a "revoke" -d 'Revoke a key, given in full or by its first 12 characters'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand keys; and not __fish_seen_subcommand_from create revoke help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand keys; and __fish_seen_subcommand_from create" -l account -d 'The account (acct_...)' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand keys; and __fish_seen_subcommand_from create" -l data-dir -d 'The server\'s data folder [default: ./meshcheck-data]' -r -F
complete -c meshcheck -n "__fish_meshcheck_using_subcommand keys; and __fish_seen_subcommand_from create" -l database -d 'The server\'s database, as given to `serve --database` [default: DATA_DIR/meshcheck.sqlite]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand keys; and __fish_seen_subcommand_from create" -s h -l help -d 'Print help'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand keys; and __fish_seen_subcommand_from create" -s V -l version -d 'Print version'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand keys; and __fish_seen_subcommand_from revoke" -l data-dir -d 'The server\'s data folder [default: ./meshcheck-data]' -r -F
complete -c meshcheck -n "__fish_meshcheck_using_subcommand keys; and __fish_seen_subcommand_from revoke" -l database -d 'The server\'s database, as given to `serve --database` [default: DATA_DIR/meshcheck.sqlite]' -r
complete -c meshcheck -n "__fish_meshcheck_using_subcommand keys; and __fish_seen_subcommand_from revoke" -s h -l help -d 'Print help'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand keys; and __fish_seen_subcommand_from revoke" -s V -l version -d 'Print version'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand keys; and __fish_seen_subcommand_from help" -f -a "create" -d 'Make another key for an account and print it (shown once)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand keys; and __fish_seen_subcommand_from help" -f -a "revoke" -d 'Revoke a key, given in full or by its first 12 characters'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand keys; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand mcp" -l dir -d 'Folder that relative paths in tool calls resolve against [default: the current directory]' -r -F
complete -c meshcheck -n "__fish_meshcheck_using_subcommand mcp" -s h -l help -d 'Print help'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand mcp" -s V -l version -d 'Print version'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand generate" -l dir -d 'The repository root to write into' -r -F
complete -c meshcheck -n "__fish_meshcheck_using_subcommand generate" -s h -l help -d 'Print help'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand generate" -s V -l version -d 'Print version'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand render-worker" -s h -l help -d 'Print help'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand render-worker" -s V -l version -d 'Print version'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand help; and not __fish_seen_subcommand_from validate compare checks profiles config render inspect serve accounts keys mcp generate render-worker help" -f -a "validate" -d 'Validate assets (files or folders) and print their reports'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand help; and not __fish_seen_subcommand_from validate compare checks profiles config render inspect serve accounts keys mcp generate render-worker help" -f -a "compare" -d 'Compare two assets or two reports: status changes and deltas; exit 1 when NEW is worse'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand help; and not __fish_seen_subcommand_from validate compare checks profiles config render inspect serve accounts keys mcp generate render-worker help" -f -a "checks" -d 'List the check catalog with the thresholds of a profile'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand help; and not __fish_seen_subcommand_from validate compare checks profiles config render inspect serve accounts keys mcp generate render-worker help" -f -a "profiles" -d 'Show the built-in budget profiles side by side'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand help; and not __fish_seen_subcommand_from validate compare checks profiles config render inspect serve accounts keys mcp generate render-worker help" -f -a "config" -d 'Show the settings a file gets from meshcheck.toml and the flags, and where each came from'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand help; and not __fish_seen_subcommand_from validate compare checks profiles config render inspect serve accounts keys mcp generate render-worker help" -f -a "render" -d 'Render stills (and a turntable GIF) of one asset under the studio rig'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand help; and not __fish_seen_subcommand_from validate compare checks profiles config render inspect serve accounts keys mcp generate render-worker help" -f -a "inspect" -d 'Ask a vision model about the renders (VIS-001, VIS-002, VIS-003)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand help; and not __fish_seen_subcommand_from validate compare checks profiles config render inspect serve accounts keys mcp generate render-worker help" -f -a "serve" -d 'Run the /v1 HTTP API (accounts, credits, uploads, jobs, webhooks)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand help; and not __fish_seen_subcommand_from validate compare checks profiles config render inspect serve accounts keys mcp generate render-worker help" -f -a "accounts" -d 'Create and list service accounts (in the server\'s data folder)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand help; and not __fish_seen_subcommand_from validate compare checks profiles config render inspect serve accounts keys mcp generate render-worker help" -f -a "keys" -d 'Create and revoke API keys of service accounts'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand help; and not __fish_seen_subcommand_from validate compare checks profiles config render inspect serve accounts keys mcp generate render-worker help" -f -a "mcp" -d 'Serve meshcheck\'s tools to agents over MCP on stdio (docs/mcp.md)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand help; and not __fish_seen_subcommand_from validate compare checks profiles config render inspect serve accounts keys mcp generate render-worker help" -f -a "generate" -d 'Regenerate completions, man pages, schemas and docs/checks.md (for maintainers)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand help; and not __fish_seen_subcommand_from validate compare checks profiles config render inspect serve accounts keys mcp generate render-worker help" -f -a "render-worker" -d 'Draw stills over stdin and stdout (started by `meshcheck serve`, and by `meshcheck validate --mode full` for more than one file)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand help; and not __fish_seen_subcommand_from validate compare checks profiles config render inspect serve accounts keys mcp generate render-worker help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand help; and __fish_seen_subcommand_from accounts" -f -a "create" -d 'Create an account and print its first API key (shown once)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand help; and __fish_seen_subcommand_from accounts" -f -a "list" -d 'List accounts with their plan, balance and keys (prefixes only)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand help; and __fish_seen_subcommand_from keys" -f -a "create" -d 'Make another key for an account and print it (shown once)'
complete -c meshcheck -n "__fish_meshcheck_using_subcommand help; and __fish_seen_subcommand_from keys" -f -a "revoke" -d 'Revoke a key, given in full or by its first 12 characters'
