//===- Protocol.h - What a compile client and a compile server say --------===//
//
// The compile server (docs/compile-server.md) runs an LLVM tool's processes as forks of one
// started copy of it, so that each skips the dynamic loader's start of libLLVM and
// libclang-cpp. A client asks for one run over a Unix socket: it sends a Request, the
// program's path, working folder, argv and environment, and its standard streams; the
// server answers Started once the process is forked, then Ended with its wait status.
//
// Shared by the client (ompsim-cc-client) and the server (libompsim-compile-server.so),
// which are built together and never talk across versions.
//
//===----------------------------------------------------------------------===//

#ifndef OMPSIM_COMPILE_SERVER_PROTOCOL_H
#define OMPSIM_COMPILE_SERVER_PROTOCOL_H

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace ompsim::compileserver {

/// The folder of a run's servers: one socket per program, named by socketPath.
inline constexpr const char *DirVariable = "OMPSIM_COMPILE_SERVER_DIR";
/// Set in a server's own environment only: the socket it listens on.
inline constexpr const char *SocketVariable = "OMPSIM_COMPILE_SERVER_SOCKET";
/// Set in a server's own environment only: a pipe's read end; the server ends when the
/// process that started it closes the write end, or dies.
inline constexpr const char *LifelineVariable = "OMPSIM_COMPILE_SERVER_LIFELINE";
/// The client's name, in bin/ beside the server library's lib/.
inline constexpr const char *ClientName = "ompsim-cc-client";
/// The server library's file name, which a client takes out of LD_PRELOAD.
inline constexpr const char *LibraryName = "libompsim-compile-server.so";

inline constexpr uint32_t Magic = 0x4f4d4343; // "OMCC"
inline constexpr uint32_t Version = 1;
/// The largest argv and environment a request may carry.
inline constexpr uint32_t MaxPayload = 64u << 20;

struct Request {
  uint32_t Magic;
  uint32_t Version;
  uint32_t PayloadSize; ///< path, cwd, argv and environment, each ending in NUL
  uint32_t Argc;
  uint32_t Envc;
  uint32_t Umask;
  uint32_t OpenStreams;    ///< bit N: the client's fd N (0-2) is open and sent along
  uint64_t BlockedSignals; ///< bit N-1: signal N is blocked
  uint64_t IgnoredSignals; ///< bit N-1: signal N is ignored
};

enum class ReplyKind : uint32_t {
  Started = 1, ///< the process runs; an Ended follows
  Ended = 2,   ///< Status is its wait status
  Refused = 3, ///< not served here (another program, a bad request): the client runs it
};

struct Reply {
  ReplyKind Kind;
  int32_t Status;
};

/// FNV-1a of the program's real path: the socket's name, short enough for sun_path.
inline std::string socketPath(const char *Dir, const char *RealProgram) {
  uint64_t Hash = 0xcbf29ce484222325ull;
  for (const char *P = RealProgram; *P; ++P)
    Hash = (Hash ^ static_cast<unsigned char>(*P)) * 0x100000001b3ull;
  char Name[32];
  std::snprintf(Name, sizeof(Name), "/%016llx.sock", static_cast<unsigned long long>(Hash));
  return std::string(Dir) + Name;
}

/// Address for a Unix socket at Path; false where Path is too long for sun_path.
inline bool unixAddress(const std::string &Path, sockaddr_un &Address) {
  Address = sockaddr_un{};
  Address.sun_family = AF_UNIX;
  if (Path.size() >= sizeof(Address.sun_path))
    return false;
  std::memcpy(Address.sun_path, Path.c_str(), Path.size() + 1);
  return true;
}

/// Repeats Step(P, Left), a send or a read of at most Left bytes at P, until Size bytes
/// went; false on an error or an early end.
template <typename CharT, typename StepFn> bool whole(CharT *P, size_t Size, StepFn Step) {
  while (Size) {
    ssize_t N = Step(P, Size);
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0)
      return false;
    P += N;
    Size -= static_cast<size_t>(N);
  }
  return true;
}

/// Sends all of [Data, Data + Size) on a socket (no SIGPIPE where the peer is gone).
inline bool sendAll(int Fd, const void *Data, size_t Size) {
  return whole(static_cast<const char *>(Data), Size,
               [Fd](const char *P, size_t Left) { return ::send(Fd, P, Left, MSG_NOSIGNAL); });
}

/// Reads exactly Size bytes.
inline bool readAll(int Fd, void *Data, size_t Size) {
  return whole(static_cast<char *>(Data), Size, [Fd](char *P, size_t Left) { return ::read(Fd, P, Left); });
}

} // namespace ompsim::compileserver

#endif // OMPSIM_COMPILE_SERVER_PROTOCOL_H
