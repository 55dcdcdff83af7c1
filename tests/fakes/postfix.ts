import { execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A real Postfix (Debian's package, run as root) of the test's own, so that what comes back to
 * Herald is what an MTA really sends: its replies at RCPT TO and its own bounce messages (DSNs).
 * Not a fake despite the folder: only its configuration is made up. Each call is a private
 * instance (`postfix -c <dir>`: its own configuration, queue, data and log in a fresh temporary
 * directory, its own loopback port), so several may run at once, in one file or across workers.
 *
 *   const mta = await startPostfix({
 *     noMailboxDomain: 'nomailbox.test',          // accepted at RCPT, then bounced: a DSN
 *     rejectDomain: 'rejected.test',              // refused at RCPT TO: 550 5.1.1
 *     bounceDomain: 'bounces.herald.test',        // DSNs to senders there go to bounceRelay
 *     bounceRelay: { host: '127.0.0.1', port: sink.port },
 *   });
 *   // send to 127.0.0.1:mta.smtpPort; no TLS, no AUTH (the client is in mynetworks)
 *   await mta.flush();                            // retry deferred mail now
 *   await mta.log();                              // its maillog, for a failing test's message
 *   await mta.stop();                             // in afterAll: no process or file is left
 *
 * Mail for any other domain is bounced too (`error:` transport): nothing leaves the machine and
 * nothing is looked up in DNS.
 */

export const POSTFIX = '/usr/sbin/postfix';
const POSTQUEUE = '/usr/sbin/postqueue';

export const postfixAvailable = (): boolean => existsSync(POSTFIX);

export interface PostfixOptions {
  /** Domain whose mailboxes do not exist: mail to it is accepted, then bounced with a DSN (not refused at RCPT). */
  noMailboxDomain: string;
  /** Domain whose mail is refused at RCPT TO with `550 5.1.1` (a synchronous rejection). */
  rejectDomain?: string;
  /** Domain of the envelope senders whose DSNs are wanted: mail to it is relayed to `bounceRelay`. */
  bounceDomain: string;
  bounceRelay: { host: string; port: number };
}

export interface PostfixInstance {
  /** smtpd's port on 127.0.0.1. */
  smtpPort: number;
  /** The instance's directory: etc/ (main.cf, master.cf, maps), queue/, data/, maillog. */
  dir: string;
  /** Its log so far (Postfix's own lines, as syslog would have them). */
  log(): Promise<string>;
  /** Deliver deferred mail now (`postqueue -f`), instead of at the next queue run. */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

// Postfix's scripts need the system's tools, and nothing of the test process's environment.
const ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' };

/**
 * A shell watching the test process: once that is gone without `stop()` (a worker killed on a
 * timeout, a crash) it stops the instance and removes its directory, so no master runs on unowned.
 * `stop()` kills it first. Detached, in a process group of its own, so the test's own signals miss it.
 */
const WATCHDOG = `
while kill -0 "$1" 2>/dev/null; do sleep 1; done
master=$(cat "$3/queue/pid/master.pid" 2>/dev/null | tr -d ' ')
/usr/sbin/postfix -c "$2" stop >/dev/null 2>&1
sleep 2
[ -n "$master" ] && kill -KILL -"$master" 2>/dev/null
rm -rf "$3"
`;

function startWatchdog(etc: string, dir: string): number | undefined {
  const child = spawn('/bin/sh', ['-c', WATCHDOG, 'herald-postfix-watchdog', String(process.pid), etc, dir], {
    detached: true,
    stdio: 'ignore',
    env: ENV,
  });
  child.unref();
  return child.pid;
}

function run(file: string, args: string[], timeoutMs = 30_000): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { env: ENV, timeout: timeoutMs }, (error, stdout, stderr) => {
      if (error) reject(Object.assign(error, { stdout, stderr }));
      else resolve({ stdout, stderr });
    });
  });
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Resolves on smtpd's 220 greeting: the master listens at once, but a broken smtpd would only show here. */
function greeting(port: number, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    const done = (error?: Error) => {
      socket.removeAllListeners();
      socket.on('error', () => {});
      if (error) socket.destroy();
      else socket.end('QUIT\r\n');
      if (error) reject(error);
      else resolve();
    };
    socket.setTimeout(timeoutMs, () => done(new Error(`no SMTP greeting within ${timeoutMs} ms`)));
    socket.on('error', (error) => done(error));
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
      if (!text.includes('\n')) return;
      if (text.startsWith('220')) done();
      else done(new Error(`unexpected greeting: ${text.trim()}`));
    });
    socket.on('close', () => done(new Error('connection closed before the greeting')));
  });
}

/** Live (not zombie) processes in a process group: the master is a group leader, its daemons are in its group. */
function groupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
    } catch {
      continue;
    }
    // The command name in parentheses may hold spaces; the fields after it do not.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z') members.push(Number(entry));
  }
  return members;
}

async function masterPid(queueDir: string): Promise<number | undefined> {
  try {
    const pid = Number((await readFile(path.join(queueDir, 'pid', 'master.pid'), 'latin1')).trim());
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

async function waitForGroupToExit(pgid: number, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (groupMembers(pgid).length) {
    if (Date.now() > end) return false;
    await sleep(25);
  }
  return true;
}

function killGroup(pgid: number, signal: NodeJS.Signals) {
  try {
    process.kill(-pgid, signal);
  } catch {
    /* already gone */
  }
}

function mainCf(dir: string, name: string, opts: PostfixOptions, maps: { transport: string; access: string; mailboxes: string }) {
  const { rejectDomain } = opts;
  return `# A test instance of Herald's suite (tests/fakes/postfix.ts); removed when the test stops it.
compatibility_level = 3.6
queue_directory = ${dir}/queue
data_directory = ${dir}/data
# The accounts and group Debian's package creates; postfix(1) checks the queue's ownership against them.
mail_owner = postfix
setgid_group = postdrop

syslog_name = ${name}
maillog_file = ${dir}/maillog
# Postfix writes its log only under these prefixes (default: /var, /dev/stdout).
maillog_file_prefixes = ${dir}

myhostname = postfix.herald.test
inet_interfaces = loopback-only
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
biff = no
append_dot_mydomain = no
readme_directory = no
alias_maps =
alias_database =

# Local delivery is not used: local(8) finds users in /etc/passwd, so nobody@ or postmaster@ would be
# delivered to /var/mail instead of bounced. The no-mailbox domain is a virtual mailbox domain with
# no mailboxes: smtpd is told not to check the (empty) list at RCPT, and virtual(8) then bounces
# every recipient as "unknown user", a DSN with status 5.1.1.
mydestination =
local_recipient_maps =
virtual_mailbox_domains = ${opts.noMailboxDomain}
virtual_mailbox_maps = texthash:${maps.mailboxes}
virtual_mailbox_base = ${dir}/mailboxes
virtual_uid_maps = static:65534
virtual_gid_maps = static:65534
smtpd_reject_unlisted_recipient = no

# DSNs to the bounce domain go to the test's listener; anything else fails here rather than leave.
transport_maps = texthash:${maps.transport}
default_transport = error:5.4.4 this test MTA delivers nowhere else
relay_transport = $default_transport
${rejectDomain ? `smtpd_recipient_restrictions = check_recipient_access texthash:${maps.access}\n` : ''}# Rejections are answered at once (default: a second's sleep each).
smtpd_error_sleep_time = 0

# No DNS: the one next hop is a bracketed address, and clients are not looked up either.
smtp_dns_support_level = disabled
lmtp_dns_support_level = disabled
smtp_host_lookup = native
smtpd_peername_lookup = no

# DSNs leave at once; deferred mail is retried every second or two, and given up after a minute.
queue_run_delay = 1s
minimal_backoff_time = 1s
maximal_backoff_time = 2s
maximal_queue_lifetime = 1m
bounce_queue_lifetime = 1m
delay_warning_time = 0
smtp_connect_timeout = 5s
`;
}

// No chroot (n in the fifth column): a chroot would need copies of /etc files inside the temporary queue.
function masterCf(port: number) {
  return `127.0.0.1:${port} inet n - n - - smtpd
pickup     unix  n - n 60 1 pickup
cleanup    unix  n - n -  0 cleanup
qmgr       unix  n - n 300 1 qmgr
rewrite    unix  - - n -  - trivial-rewrite
bounce     unix  - - n -  0 bounce
defer      unix  - - n -  0 bounce
trace      unix  - - n -  0 bounce
verify     unix  - - n -  1 verify
flush      unix  n - n 1000? 0 flush
proxymap   unix  - - n -  - proxymap
proxywrite unix  - - n -  1 proxymap
smtp       unix  - - n -  - smtp
relay      unix  - - n -  - smtp
showq      unix  n - n -  - showq
error      unix  - - n -  - error
retry      unix  - - n -  - error
discard    unix  - - n -  - discard
virtual    unix  - n n -  - virtual
anvil      unix  - - n -  1 anvil
scache     unix  - - n -  1 scache
postlog    unix-dgram n - n - 1 postlogd
`;
}

const POSTFIX_FILES = '/etc/postfix/postfix-files';

function accountId(file: string, name: string): number {
  const line = readFileSync(file, 'utf8').split('\n').find((l) => l.startsWith(`${name}:`));
  if (!line) throw new Error(`no ${name} in ${file}: is Debian's postfix package installed?`);
  return Number(line.split(':')[2]);
}

/**
 * The queue and data directories as the package lists them (owner, group, mode), made here so that
 * the start can skip its integrity check: that check (post-install create-missing, then a scan of
 * every directory) runs dozens of postconf processes and takes seconds on a loaded machine, where
 * the master itself starts in a fraction of one. Postfix's own `postfix-script` skips it when
 * `quick-start` is in the queue directory (what `postfix quick-stop` leaves behind); it removes the
 * marker, so a later start checks again. Without the package's list, the start checks as usual.
 */
async function createQueueLayout(queue: string, data: string): Promise<boolean> {
  if (!existsSync(POSTFIX_FILES)) return false;
  const owner = accountId('/etc/passwd', 'postfix');
  const group = accountId('/etc/group', 'postdrop');
  for (const line of readFileSync(POSTFIX_FILES, 'utf8').split('\n')) {
    const [name, type, user, grp, mode] = line.split(':');
    if (type !== 'd' || !/^\$(queue|data)_directory\b/.test(name)) continue;
    const where = name.replace('$queue_directory', queue).replace('$data_directory', data);
    await mkdir(where, { recursive: true });
    await chown(where, user === '$mail_owner' ? owner : 0, grp === '$setgid_group' ? group : 0);
    await chmod(where, parseInt(mode, 8));
  }
  return true;
}

export async function startPostfix(opts: PostfixOptions): Promise<PostfixInstance> {
  if (!postfixAvailable()) throw new Error(`${POSTFIX} is missing: install it with "apt-get install -y postfix"`);
  const dir = await mkdtemp(path.join(tmpdir(), 'herald-postfix-'));
  // Postfix's daemons run as the postfix user and open files under here by absolute path.
  await chmod(dir, 0o755);
  const etc = path.join(dir, 'etc');
  const queue = path.join(dir, 'queue');
  await Promise.all([mkdir(etc), mkdir(queue), mkdir(path.join(dir, 'mailboxes'))]);
  const quick = await createQueueLayout(queue, path.join(dir, 'data'));
  const name = `herald-${path.basename(dir).slice('herald-postfix-'.length)}`;
  const maps = { transport: path.join(etc, 'transport'), access: path.join(etc, 'recipient_access'), mailboxes: path.join(etc, 'mailboxes') };
  const { host, port: relayPort } = opts.bounceRelay;
  await writeFile(maps.transport, `${opts.bounceDomain} smtp:[${host}]:${relayPort}\n`);
  await writeFile(maps.access, opts.rejectDomain ? `${opts.rejectDomain} 550 5.1.1 No such user\n` : '');
  await writeFile(maps.mailboxes, '');
  await writeFile(path.join(etc, 'main.cf'), mainCf(dir, name, opts, maps));
  const log = () => readFile(path.join(dir, 'maillog'), 'utf8').catch(() => '');

  let smtpPort = 0;
  let pgid: number | undefined;
  const watchdog = startWatchdog(etc, dir);
  try {
    // The free port may be taken between probing it and the master binding it; another one then.
    for (let attempt = 1; ; attempt++) {
      smtpPort = await freePort();
      await writeFile(path.join(etc, 'master.cf'), masterCf(smtpPort));
      if (quick) await writeFile(path.join(queue, 'quick-start'), '');
      try {
        // -w: returns once the master is up (or has failed), not after forking it off.
        await run(POSTFIX, ['-c', etc, 'start']);
        pgid = await masterPid(queue);
        await greeting(smtpPort, 15_000);
        break;
      } catch (error) {
        const text = await log();
        if (attempt < 3 && /Address already in use/.test(text)) continue;
        const { stderr } = error as { stderr?: string };
        throw new Error(`Postfix did not start in ${dir}: ${(error as Error).message}${stderr ? `\n${stderr}` : ''}\n--- maillog\n${text}`);
      }
    }
  } catch (error) {
    await shutDown(etc, queue, pgid, watchdog);
    await rm(dir, { recursive: true, force: true });
    throw error;
  }

  let stopped = false;
  return {
    smtpPort,
    dir,
    log,
    async flush() {
      await run(POSTQUEUE, ['-c', etc, '-f']);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await shutDown(etc, queue, pgid, watchdog);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** `postfix stop` only signals the master; its daemons go a moment later, and the directory must outlive them. */
async function shutDown(etc: string, queue: string, pgid: number | undefined, watchdog: number | undefined) {
  if (watchdog) killGroup(watchdog, 'SIGKILL');
  pgid ??= await masterPid(queue);
  try {
    await run(POSTFIX, ['-c', etc, 'stop'], 10_000);
  } catch {
    if (pgid) killGroup(pgid, 'SIGTERM');
  }
  if (!pgid) return;
  if (!(await waitForGroupToExit(pgid, 5000))) {
    killGroup(pgid, 'SIGKILL');
    await waitForGroupToExit(pgid, 2000);
  }
}
