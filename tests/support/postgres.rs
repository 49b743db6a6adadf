//! A throwaway PostgreSQL cluster for the tests: `initdb` in a temporary
//! folder and a `postgres` server on a free loopback port, started once per
//! test process and killed with it (the parent-death signal), with a fresh
//! database per test. PostgreSQL refuses to run as root, so a root test
//! process runs both as the `postgres` user.
//!
//! The server binaries are looked for in `MESHCHECK_PG_BIN`, then
//! `/usr/lib/postgresql/<newest>/bin`, then `PATH`; CI installs them when
//! missing (.ci/run).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The running cluster.
pub struct Cluster {
    /// Its loopback port.
    pub port: u16,
    _dir: PathBuf,
    _server: Mutex<Child>,
}

fn bin_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("MESHCHECK_PG_BIN") {
        return PathBuf::from(d);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, p): &(u32, PathBuf)| p.join("initdb").exists())
        .collect();
    versions.sort();
    if let Some((_, p)) = versions.pop() {
        return p;
    }
    let out = Command::new("sh").args(["-c", "command -v initdb"]).output().expect("sh");
    let found = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        !found.is_empty(),
        "PostgreSQL's server binaries (initdb, postgres) are needed: install postgresql (CI's .ci/run does) or set MESHCHECK_PG_BIN"
    );
    Path::new(&found).parent().unwrap().to_path_buf()
}

/// The uid and gid of the `postgres` user when this process is root.
fn run_as() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let out = Command::new("id").args(["-u", "postgres"]).output().expect("id");
    let uid: u32 =
        String::from_utf8_lossy(&out.stdout).trim().parse().expect("a postgres user (PostgreSQL refuses root)");
    let out = Command::new("id").args(["-g", "postgres"]).output().expect("id");
    let gid: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    Some((uid, gid))
}

fn command(bin: &Path, user: Option<(u32, u32)>) -> Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(bin);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if let Some((uid, gid)) = user
                && (libc::setgid(gid) != 0 || libc::setuid(uid) != 0)
            {
                return Err(std::io::Error::last_os_error());
            }
            // After the uid change (which would clear it): die with the tests.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The cluster of this test process, started on first use.
pub fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(start)
}

fn start() -> Cluster {
    let bin = bin_dir();
    let user = run_as();
    let dir = std::env::temp_dir().join(format!("meshcheck-pg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).unwrap();
    }
    let data = dir.join("data");
    let out = command(&bin.join("initdb"), user)
        .args(["-D", data.to_str().unwrap(), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"])
        .stdin(Stdio::null())
        .output()
        .expect("initdb runs");
    assert!(out.status.success(), "initdb failed: {}", String::from_utf8_lossy(&out.stderr));
    let port = free_port();
    // The parent-death signal follows the thread that forks, not the
    // process: fork from a thread that lives as long as the test process.
    let (tx, rx) = std::sync::mpsc::channel();
    let (log, d) = (dir.join("server.log"), data.clone());
    std::thread::spawn(move || {
        let child = command(&bin.join("postgres"), user)
            .args(["-D", d.to_str().unwrap(), "-p", &port.to_string(), "-k", d.parent().unwrap().to_str().unwrap()])
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=300"])
            .args(["-c", "synchronous_commit=off", "-c", "full_page_writes=off"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(log).unwrap()))
            .spawn();
        tx.send(child).unwrap();
        loop {
            std::thread::park();
        }
    });
    let server = rx.recv().unwrap().expect("postgres starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if postgres::Client::connect(&format!("host=127.0.0.1 port={port} user=postgres"), postgres::NoTls).is_ok() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "PostgreSQL did not start: {}",
            std::fs::read_to_string(dir.join("server.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Cluster { port, _dir: dir, _server: Mutex::new(server) }
}

impl Cluster {
    /// A new empty database; its connection URL.
    pub fn database(&self) -> String {
        let name = format!("t_{}", meshcheck::store::random_id("", 12).to_lowercase());
        let mut c =
            postgres::Client::connect(&format!("host=127.0.0.1 port={} user=postgres", self.port), postgres::NoTls)
                .expect("connect");
        c.batch_execute(&format!("CREATE DATABASE {name}")).expect("create database");
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }
}

/// A new empty database on this process's cluster; its URL.
pub fn database() -> String {
    cluster().database()
}
