// libpq, loaded when the PostgreSQL backend is first used rather than linked into every program.
// Linked, libpq and the ~25 libraries it needs (Kerberos, LDAP, GnuTLS, ...) are loaded at the
// start of every program that links factum, SQLite-only ones included: +11 ms per process start
// on the reference machine (docs/performance.md, "What a program pays at start").
//
// Internal. Thread-safety: libpq() may be called from any thread; it loads the library once.
#pragma once

#include <libpq-fe.h>

namespace factum::detail {

// Every libpq function the backend calls.
#define FACTUM_LIBPQ_FUNCTIONS(X) \
  X(PQclear)                      \
  X(PQcmdTuples)                  \
  X(PQconndefaults)               \
  X(PQconnectdb)                  \
  X(PQconnectdbParams)            \
  X(PQconninfoFree)               \
  X(PQconsumeInput)               \
  X(PQenterPipelineMode)          \
  X(PQerrorMessage)               \
  X(PQexec)                       \
  X(PQexecParams)                 \
  X(PQexecPrepared)               \
  X(PQexitPipelineMode)           \
  X(PQfinish)                     \
  X(PQfreemem)                    \
  X(PQftype)                      \
  X(PQgetResult)                  \
  X(PQgetisnull)                  \
  X(PQgetlength)                  \
  X(PQgetvalue)                   \
  X(PQnfields)                    \
  X(PQnotifies)                   \
  X(PQntuples)                    \
  X(PQpipelineSync)               \
  X(PQprepare)                    \
  X(PQresultErrorField)           \
  X(PQresultErrorMessage)         \
  X(PQresultStatus)               \
  X(PQsendPrepare)                \
  X(PQsendQueryParams)            \
  X(PQsendQueryPrepared)          \
  X(PQsetNoticeProcessor)         \
  X(PQsocket)                     \
  X(PQstatus)                     \
  X(PQtransactionStatus)          \
  X(PQunescapeBytea)

struct LibPq {
#define FACTUM_LIBPQ_MEMBER(name) decltype(&::name) name = nullptr;
  FACTUM_LIBPQ_FUNCTIONS(FACTUM_LIBPQ_MEMBER)
#undef FACTUM_LIBPQ_MEMBER
};

// Opens libpq and looks its functions up: called by libpq() only (each call opens it again).
LibPq load_libpq();

// libpq's functions, from the library named by the environment variable FACTUM_LIBPQ (a file
// name or path) or else the one the build found (libpq.so.5 when it lies in a directory the
// system's loader searches, its full path otherwise), loaded on the first call. Throws StorageError
// (Kind::other) naming the library when it cannot be loaded or lacks one of the functions; a later
// call tries again. Inline: a page's decoding calls it for every column of every row.
inline const LibPq& libpq() {
  static const LibPq lib = load_libpq();  // a throw leaves it uninitialised: the next call tries
  return lib;
}

}  // namespace factum::detail
