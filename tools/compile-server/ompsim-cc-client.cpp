//===- ompsim-cc-client.cpp - Runs one program through its compile server --===//
//
// ompsim-cc-client PROGRAM ARGV0 ARG...: runs PROGRAM with argv ARGV0 ARG..., as a fork of
// PROGRAM's compile server when $OMPSIM_COMPILE_SERVER_DIR has one for it, else by exec. Its
// exit status is the program's (a program a signal ended ends the client by the same
// signal). The program gets the client's standard streams, working folder, environment
// (less the server library in LD_PRELOAD), umask, blocked and ignored signals.
//
// Killing the client ends the program: its server kills the program's process group when
// the client's connection closes.
//
//===----------------------------------------------------------------------===//

#include "Protocol.h"

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <limits.h>
#include <string>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

using namespace ompsim::compileserver;

namespace {

/// Runs PROGRAM by exec (a name without a slash is looked up on PATH).
[[noreturn]] void runDirectly(const char *Program, char **Argv) {
  ::execvp(Program, Argv);
  int Err = errno;
  std::fprintf(stderr, "ompsim-cc-client: cannot run %s: %s\n", Program, std::strerror(Err));
  std::_Exit(Err == ENOENT ? 127 : 126);
}

/// LD_PRELOAD without the server library: the program sees the environment it would have
/// had without the compile server.
std::string withoutServerLibrary(const char *Value) {
  std::string Out, Entry;
  auto Flush = [&] {
    size_t Slash = Entry.rfind('/');
    std::string Base = Slash == std::string::npos ? Entry : Entry.substr(Slash + 1);
    if (!Entry.empty() && Base != LibraryName)
      Out += (Out.empty() ? "" : ":") + Entry;
    Entry.clear();
  };
  for (const char *P = Value; *P; ++P) {
    if (*P == ':' || *P == ' ')
      Flush();
    else
      Entry += *P;
  }
  Flush();
  return Out;
}

/// The request's payload: program, working folder, argv, environment.
bool payload(const char *Program, char **Argv, std::string &Out, uint32_t &Argc, uint32_t &Envc) {
  char Cwd[4096];
  if (!::getcwd(Cwd, sizeof(Cwd)))
    return false;
  Out.append(Program).push_back('\0');
  Out.append(Cwd).push_back('\0');
  Argc = Envc = 0;
  for (char **A = Argv; *A; ++A, ++Argc)
    Out.append(*A).push_back('\0');
  for (char **E = environ; *E; ++E) {
    if (std::strncmp(*E, "LD_PRELOAD=", 11) == 0) {
      std::string Rest = withoutServerLibrary(*E + 11);
      if (Rest.empty())
        continue;
      Out.append("LD_PRELOAD=").append(Rest).push_back('\0');
    } else {
      Out.append(*E).push_back('\0');
    }
    ++Envc;
  }
  return Out.size() <= MaxPayload;
}

Request header(uint32_t PayloadSize, uint32_t Argc, uint32_t Envc, int *Streams, int &NumStreams) {
  Request R{};
  R.Magic = Magic;
  R.Version = Version;
  R.PayloadSize = PayloadSize;
  R.Argc = Argc;
  R.Envc = Envc;
  mode_t Mask = ::umask(0);
  ::umask(Mask);
  R.Umask = Mask;
  NumStreams = 0;
  for (int Fd = 0; Fd < 3; ++Fd)
    if (::fcntl(Fd, F_GETFD) != -1) {
      R.OpenStreams |= 1u << Fd;
      Streams[NumStreams++] = Fd;
    }
  sigset_t Blocked;
  ::sigprocmask(SIG_SETMASK, nullptr, &Blocked);
  for (int Sig = 1; Sig <= 64; ++Sig) {
    if (::sigismember(&Blocked, Sig) == 1)
      R.BlockedSignals |= 1ull << (Sig - 1);
    struct sigaction Action;
    if (::sigaction(Sig, nullptr, &Action) == 0 && Action.sa_handler == SIG_IGN)
      R.IgnoredSignals |= 1ull << (Sig - 1);
  }
  return R;
}

/// Connects to PROGRAM's server; -1 where there is none.
int connectToServer(const char *Program) {
  const char *Dir = std::getenv(DirVariable);
  char Real[PATH_MAX];
  if (!Dir || !*Dir || !std::strchr(Program, '/') || !::realpath(Program, Real))
    return -1;
  std::string Path = socketPath(Dir, Real);
  sockaddr_un Address;
  if (!unixAddress(Path, Address))
    return -1;
  int Fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (Fd < 0)
    return -1;
  if (::connect(Fd, reinterpret_cast<sockaddr *>(&Address), sizeof(Address)) != 0) {
    ::close(Fd);
    return -1;
  }
  return Fd;
}

bool sendRequest(int Fd, const Request &R, const int *Streams, int NumStreams, const std::string &Payload) {
  char Control[CMSG_SPACE(3 * sizeof(int))] = {};
  iovec Iov{const_cast<Request *>(&R), sizeof(R)};
  msghdr Msg{};
  Msg.msg_iov = &Iov;
  Msg.msg_iovlen = 1;
  if (NumStreams) {
    Msg.msg_control = Control;
    Msg.msg_controllen = CMSG_SPACE(NumStreams * sizeof(int));
    cmsghdr *C = CMSG_FIRSTHDR(&Msg);
    C->cmsg_level = SOL_SOCKET;
    C->cmsg_type = SCM_RIGHTS;
    C->cmsg_len = CMSG_LEN(NumStreams * sizeof(int));
    std::memcpy(CMSG_DATA(C), Streams, NumStreams * sizeof(int));
  }
  ssize_t N;
  do
    N = ::sendmsg(Fd, &Msg, MSG_NOSIGNAL);
  while (N < 0 && errno == EINTR);
  return N == static_cast<ssize_t>(sizeof(R)) && sendAll(Fd, Payload.data(), Payload.size());
}

/// Ends the client as the program ended: its exit status, or the signal that ended it.
[[noreturn]] void endAs(int Status) {
  if (WIFEXITED(Status))
    std::_Exit(WEXITSTATUS(Status));
  int Sig = WTERMSIG(Status);
  std::signal(Sig, SIG_DFL);
  sigset_t One;
  ::sigemptyset(&One);
  ::sigaddset(&One, Sig);
  ::sigprocmask(SIG_UNBLOCK, &One, nullptr);
  ::raise(Sig);
  std::_Exit(128 + Sig);
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fputs("usage: ompsim-cc-client PROGRAM ARGV0 [ARG...]\n", stderr);
    return 2;
  }
  const char *Program = argv[1];
  char **Argv = argv + 2;
  int Fd = connectToServer(Program);
  if (Fd < 0)
    runDirectly(Program, Argv);
  std::string Payload;
  uint32_t Argc, Envc;
  if (!payload(Program, Argv, Payload, Argc, Envc))
    runDirectly(Program, Argv);
  int Streams[3];
  int NumStreams;
  Request R = header(static_cast<uint32_t>(Payload.size()), Argc, Envc, Streams, NumStreams);
  Reply Answer{};
  // Nothing ran yet until Started comes: a server that refuses, or ends first, leaves
  // the program to run here.
  if (!sendRequest(Fd, R, Streams, NumStreams, Payload) || !readAll(Fd, &Answer, sizeof(Answer)) ||
      Answer.Kind != ReplyKind::Started) {
    ::close(Fd);
    runDirectly(Program, Argv);
  }
  if (!readAll(Fd, &Answer, sizeof(Answer)) || Answer.Kind != ReplyKind::Ended) {
    std::fprintf(stderr, "ompsim-cc-client: %s: its compile server ended before the program did\n", Program);
    return 125;
  }
  endAs(Answer.Status);
}
