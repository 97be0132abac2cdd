"""Runs a command under what nfkube.service imposes on its process: MemoryDenyWriteExecute
(PR_SET_MDWE), SystemCallFilter=@system-service with SystemCallErrorNumber=EPERM, and
RestrictNamespaces (setns/unshare refused). Usage: sandbox.py [--no-mdwe] SYSCALLS_FILE -- cmd..."""
import ctypes, os, sys
args = sys.argv[1:]
mdwe = True
if args[0] == '--no-mdwe':
    mdwe = False; args = args[1:]
allowed = open(args[0]).read().split()
cmd = args[args.index('--') + 1:]
libc = ctypes.CDLL(None, use_errno=True)
if mdwe and libc.prctl(65, 1, 0, 0, 0) != 0:
    sys.exit('PR_SET_MDWE failed: %d' % ctypes.get_errno())
if libc.prctl(38, 1, 0, 0, 0) != 0:
    sys.exit('PR_SET_NO_NEW_PRIVS failed')
sc = ctypes.CDLL('libseccomp.so.2')
sc.seccomp_init.restype = ctypes.c_void_p
sc.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
sc.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
sc.seccomp_load.argtypes = [ctypes.c_void_p]
ctx = sc.seccomp_init(0x00050000 | 1)  # SCMP_ACT_ERRNO(EPERM)
for name in allowed:
    if name in ('setns', 'unshare'):
        continue
    nr = sc.seccomp_syscall_resolve_name(name.encode())
    if nr < 0:
        continue
    sc.seccomp_rule_add(ctx, 0x7fff0000, nr, 0)  # SCMP_ACT_ALLOW
if sc.seccomp_load(ctx) != 0:
    sys.exit('seccomp_load failed')
os.execvp(cmd[0], cmd)
