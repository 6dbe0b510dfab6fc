// Kept only for postgres_storage.cpp until the PostgreSQL backend moves to src/postgres/: it
// includes "rows.hpp" for what is now event_rows.hpp (assign, head_of). Delete this file once
// no source includes it; the SQLite backend's rows are src/sqlite/rows.hpp.
#pragma once

#include "event_rows.hpp"
