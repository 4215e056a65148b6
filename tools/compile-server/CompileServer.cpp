//===- CompileServer.cpp - libompsim-compile-server.so --------------------===//
//
// Preloaded into an LLVM tool (clang-22, flang-22, lld, clang-linker-wrapper,
// llvm-offload-binary), this library has two jobs (docs/compile-server.md):
//
// - Server. Started with $OMPSIM_COMPILE_SERVER_SOCKET, the tool never enters its main
//   from __libc_start_main: once the dynamic loader has loaded and relocated its libraries
//   and run their constructors, it listens on that socket, and for each client's request
//   forks a worker, which forks the program and waits for it. The program enters the
//   tool's main with the client's argv, environment, working folder, streams, umask and
//   signal state, as a fresh process of the tool would.
// - Redirect. In any process it is loaded into (a server's programs, a shell or Python
//   started with it in LD_PRELOAD), posix_spawn and execve of a program that has a server
//   in $OMPSIM_COMPILE_SERVER_DIR run the client instead, which asks that server.
//
// Lifetimes: a server ends when its lifeline pipe closes (the process that started it
// ended); a worker dies with its server and a program with its worker (PR_SET_PDEATHSIG);
// a worker whose client's connection closes kills the program's process group.
//
//===----------------------------------------------------------------------===//

#include "Protocol.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <spawn.h>
#include <string>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char **environ;

using namespace ompsim::compileserver;

namespace {

using MainFn = int (*)(int, char **, char **);
using StartMainFn = int (*)(MainFn, int, char **, void (*)(), void (*)(), void (*)(), void *);
using SpawnFn = int (*)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                        char *const[], char *const[]);
using ExecveFn = int (*)(const char *, char *const[], char *const[]);

/// The arguments _start passed to __libc_start_main, kept for each program.
struct StartArgs {
  StartMainFn Real;
  MainFn Main;
  void (*Init)();
  void (*Fini)();
  void (*RtldFini)();
  void *StackEnd;
};

[[noreturn]] void fail(const char *What, const char *Object) {
  std::fprintf(stderr, "ompsim compile server: %s %s: %s\n", What, Object, std::strerror(errno));
  std::_Exit(1);
}

/// One request, as a worker received it.
struct Job {
  Request Header{};
  int Streams[3] = {-1, -1, -1};
  std::vector<char> Payload;
  const char *Program = nullptr;
  const char *Cwd = nullptr;
  std::vector<char *> Block; ///< argv, NULL, environment, NULL
};

bool receive(int Conn, Job &J) {
  char Control[CMSG_SPACE(3 * sizeof(int))];
  iovec Iov{&J.Header, sizeof(J.Header)};
  msghdr Msg{};
  Msg.msg_iov = &Iov;
  Msg.msg_iovlen = 1;
  Msg.msg_control = Control;
  Msg.msg_controllen = sizeof(Control);
  ssize_t N;
  do
    N = ::recvmsg(Conn, &Msg, MSG_WAITALL | MSG_CMSG_CLOEXEC);
  while (N < 0 && errno == EINTR);
  int Received[3], NumReceived = 0;
  for (cmsghdr *C = CMSG_FIRSTHDR(&Msg); C; C = CMSG_NXTHDR(&Msg, C))
    if (C->cmsg_level == SOL_SOCKET && C->cmsg_type == SCM_RIGHTS) {
      size_t Count = (C->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t I = 0; I < Count; ++I) {
        int Fd;
        std::memcpy(&Fd, CMSG_DATA(C) + I * sizeof(int), sizeof(int));
        if (NumReceived < 3)
          Received[NumReceived++] = Fd;
        else
          ::close(Fd);
      }
    }
  const Request &H = J.Header;
  int Expected = __builtin_popcount(H.OpenStreams & 7u);
  if (N != static_cast<ssize_t>(sizeof(Request)) || H.Magic != Magic || H.Version != Version ||
      H.PayloadSize > MaxPayload || (Msg.msg_flags & MSG_CTRUNC) || NumReceived != Expected)
    return false;
  for (int Fd = 0, Next = 0; Fd < 3; ++Fd)
    if (H.OpenStreams & (1u << Fd))
      J.Streams[Fd] = Received[Next++];
  J.Payload.resize(H.PayloadSize);
  if (!readAll(Conn, J.Payload.data(), J.Payload.size()))
    return false;
  // Program, cwd, then Argc + Envc strings, each ending in NUL, and nothing after.
  std::vector<char *> Strings;
  for (size_t I = 0, Start = 0; I < J.Payload.size(); ++I)
    if (J.Payload[I] == '\0') {
      Strings.push_back(J.Payload.data() + Start);
      Start = I + 1;
    }
  if (H.Argc == 0 || Strings.size() != 2ull + H.Argc + H.Envc || J.Payload.back() != '\0')
    return false;
  J.Program = Strings[0];
  J.Cwd = Strings[1];
  J.Block.assign(Strings.begin() + 2, Strings.begin() + 2 + H.Argc);
  J.Block.push_back(nullptr);
  J.Block.insert(J.Block.end(), Strings.begin() + 2 + H.Argc, Strings.end());
  J.Block.push_back(nullptr);
  return true;
}

void reply(int Conn, ReplyKind Kind, int Status) {
  Reply R{Kind, Status};
  sendAll(Conn, &R, sizeof(R));
}

/// In the forked program: the client's process state, then the tool's main.
[[noreturn]] void enterProgram(const StartArgs &Start, Job &J) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::setpgid(0, 0);
  for (int Fd = 0; Fd < 3; ++Fd) {
    if (J.Streams[Fd] < 0)
      ::close(Fd);
    else if (J.Streams[Fd] != Fd)
      ::dup2(J.Streams[Fd], Fd);
  }
  ::syscall(SYS_close_range, 3u, ~0u, 0u);
  if (::chdir(J.Cwd) != 0) {
    std::fprintf(stderr, "ompsim compile server: cannot enter the folder %s: %s\n", J.Cwd,
                 std::strerror(errno));
    std::_Exit(127);
  }
  ::umask(static_cast<mode_t>(J.Header.Umask));
  for (int Sig = 1; Sig <= 64; ++Sig) {
    if (Sig == SIGKILL || Sig == SIGSTOP || (Sig >= 32 && Sig < SIGRTMIN))
      continue;
    std::signal(Sig, (J.Header.IgnoredSignals >> (Sig - 1)) & 1 ? SIG_IGN : SIG_DFL);
  }
  sigset_t Blocked;
  ::sigemptyset(&Blocked);
  for (int Sig = 1; Sig <= 64; ++Sig)
    if ((J.Header.BlockedSignals >> (Sig - 1)) & 1)
      ::sigaddset(&Blocked, Sig);
  ::sigprocmask(SIG_SETMASK, &Blocked, nullptr);
  int Argc = static_cast<int>(J.Header.Argc);
  char **Argv = J.Block.data();
  environ = Argv + Argc + 1;
  program_invocation_name = Argv[0];
  const char *Slash = std::strrchr(Argv[0], '/');
  program_invocation_short_name = const_cast<char *>(Slash ? Slash + 1 : Argv[0]);
  Start.Real(Start.Main, Argc, Argv, Start.Init, Start.Fini, Start.RtldFini, Start.StackEnd);
  std::_Exit(127); // __libc_start_main does not return
}

/// A worker: one client's request, its program, and the program's end.
[[noreturn]] void work(const StartArgs &Start, const char *Exe, int Conn, pid_t Server) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != Server)
    std::_Exit(1);
  std::signal(SIGCHLD, SIG_DFL);
  Job J;
  char Real[PATH_MAX];
  if (!receive(Conn, J) || !::realpath(J.Program, Real) || std::strcmp(Real, Exe) != 0) {
    reply(Conn, ReplyKind::Refused, 0);
    std::_Exit(0);
  }
  pid_t Child = ::fork();
  if (Child == 0) {
    ::close(Conn);
    enterProgram(Start, J);
  }
  if (Child < 0) {
    reply(Conn, ReplyKind::Refused, errno);
    std::_Exit(0);
  }
  ::setpgid(Child, Child);
  for (int Fd : J.Streams)
    if (Fd >= 0)
      ::close(Fd);
  reply(Conn, ReplyKind::Started, 0);
  // Without pidfds (Linux before 5.3) the worker waits for the program alone, and a
  // killed client's program runs to its end.
  int Pidfd = static_cast<int>(::syscall(SYS_pidfd_open, Child, 0));
  pollfd Watch[2] = {{Pidfd, POLLIN, 0}, {Conn, POLLIN, 0}};
  while (Pidfd >= 0) {
    int N = ::poll(Watch, 2, -1);
    if (N < 0 && errno == EINTR)
      continue;
    if (N < 0)
      break;
    // A client sends nothing after its request: input or an end on the connection
    // means it is gone, and so must be its program.
    if (Watch[1].revents) {
      ::kill(-Child, SIGKILL);
      ::kill(Child, SIGKILL);
      ::waitpid(Child, nullptr, 0);
      std::_Exit(0);
    }
    if (Watch[0].revents)
      break;
  }
  int Status = 0;
  while (::waitpid(Child, &Status, 0) < 0 && errno == EINTR) {
  }
  // What the program started in its group and left running goes with it, as a
  // compile's jobs do when its driver ends.
  ::kill(-Child, SIGKILL);
  reply(Conn, ReplyKind::Ended, Status);
  std::_Exit(0);
}

[[noreturn]] void serve(const StartArgs &Start, const char *SocketPath) {
  const char *Lifeline = std::getenv(LifelineVariable);
  int LifelineFd = Lifeline ? std::atoi(Lifeline) : -1;
  char Exe[PATH_MAX];
  if (!::realpath("/proc/self/exe", Exe))
    fail("cannot find", "/proc/self/exe");
  std::string Socket = SocketPath;
  ::unsetenv(SocketVariable);
  ::unsetenv(LifelineVariable);
  sockaddr_un Address;
  std::string Temporary = Socket + ".new";
  if (!unixAddress(Temporary, Address)) {
    errno = ENAMETOOLONG;
    fail("cannot listen on", Socket.c_str());
  }
  int Listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ::unlink(Temporary.c_str());
  if (Listener < 0 || ::bind(Listener, reinterpret_cast<sockaddr *>(&Address), sizeof(Address)) != 0 ||
      ::listen(Listener, 128) != 0 || ::rename(Temporary.c_str(), Socket.c_str()) != 0)
    fail("cannot listen on", Socket.c_str());
  std::signal(SIGCHLD, SIG_IGN); // workers reap themselves
  std::signal(SIGPIPE, SIG_IGN);
  pid_t Self = ::getpid();
  // Ready: the starter reads the server's stderr to its end, then finds the socket.
  int Null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int Fd = 0; Fd < 3; ++Fd)
    ::dup2(Null, Fd);
  ::close(Null);
  pollfd Watch[2] = {{Listener, POLLIN, 0}, {LifelineFd, POLLIN, 0}};
  for (;;) {
    int N = ::poll(Watch, LifelineFd >= 0 ? 2 : 1, -1);
    if (N < 0 && errno == EINTR)
      continue;
    if (N < 0 || Watch[1].revents || (Watch[0].revents & (POLLERR | POLLHUP)))
      break;
    int Conn = ::accept4(Listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (Conn < 0)
      continue;
    pid_t Worker = ::fork();
    if (Worker == 0) {
      ::close(Listener);
      if (LifelineFd >= 0)
        ::close(LifelineFd);
      work(Start, Exe, Conn, Self);
    }
    ::close(Conn);
  }
  ::unlink(Socket.c_str());
  size_t Slash = Socket.rfind('/');
  if (Slash != std::string::npos)
    ::rmdir(Socket.substr(0, Slash).c_str()); // the last server out removes the folder
  std::_Exit(0);
}

/// The value of NAME in an environment block, or null.
const char *lookup(char *const Env[], const char *Name) {
  size_t Length = std::strlen(Name);
  for (char *const *E = Env; E && *E; ++E)
    if (std::strncmp(*E, Name, Length) == 0 && (*E)[Length] == '=')
      return *E + Length + 1;
  return nullptr;
}

/// The client, bin/ompsim-cc-client beside this library's lib/ (a build folder, or an
/// installed tree's lib/ompsim); empty where it is not there.
std::string findClient() {
  Dl_info Info;
  if (!::dladdr(reinterpret_cast<void *>(&findClient), &Info) || !Info.dli_fname)
    return {};
  std::string Library = Info.dli_fname;
  size_t Slash = Library.rfind('/');
  if (Slash == std::string::npos)
    return {};
  std::string Client = Library.substr(0, Slash) + "/../bin/" + ClientName;
  return ::access(Client.c_str(), X_OK) == 0 ? Client : std::string();
}

/// findClient's answer, looked for once a process.
const std::string &clientPath() {
  static const std::string Path = findClient();
  return Path;
}

/// The client command that runs Path through its server, or an empty vector where Path
/// has none.
std::vector<char *> redirected(const char *Path, char *const Argv[], char *const Env[]) {
  const char *Dir = lookup(Env, DirVariable);
  char Real[PATH_MAX];
  if (!Dir || !*Dir || !Path || !::realpath(Path, Real))
    return {};
  struct stat Info;
  if (::stat(socketPath(Dir, Real).c_str(), &Info) != 0 || !S_ISSOCK(Info.st_mode))
    return {};
  const std::string &Client = clientPath();
  if (Client.empty())
    return {};
  std::vector<char *> Out{const_cast<char *>(Client.c_str()), const_cast<char *>(Path)};
  for (char *const *A = Argv; A && *A; ++A)
    Out.push_back(*A);
  Out.push_back(nullptr);
  return Out;
}

} // namespace

extern "C" {

int __libc_start_main(MainFn Main, int Argc, char **Argv, void (*Init)(), void (*Fini)(), void (*RtldFini)(),
                      void *StackEnd) {
  auto Real = reinterpret_cast<StartMainFn>(::dlsym(RTLD_NEXT, "__libc_start_main"));
  StartArgs Start{Real, Main, Init, Fini, RtldFini, StackEnd};
  if (const char *Socket = std::getenv(SocketVariable))
    serve(Start, Socket);
  return Real(Main, Argc, Argv, Init, Fini, RtldFini, StackEnd);
}

int posix_spawn(pid_t *Pid, const char *Path, const posix_spawn_file_actions_t *Actions,
                const posix_spawnattr_t *Attributes, char *const Argv[], char *const Env[]) {
  static auto Real = reinterpret_cast<SpawnFn>(::dlsym(RTLD_NEXT, "posix_spawn"));
  std::vector<char *> Command = redirected(Path, Argv, Env ? Env : environ);
  if (Command.empty())
    return Real(Pid, Path, Actions, Attributes, Argv, Env);
  return Real(Pid, Command[0], Actions, Attributes, Command.data(), Env);
}

int execve(const char *Path, char *const Argv[], char *const Env[]) {
  static auto Real = reinterpret_cast<ExecveFn>(::dlsym(RTLD_NEXT, "execve"));
  std::vector<char *> Command = redirected(Path, Argv, Env);
  if (Command.empty())
    return Real(Path, Argv, Env);
  return Real(Command[0], Command.data(), Env);
}

} // extern "C"
