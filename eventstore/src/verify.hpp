// Kept only for postgres_storage.cpp until the PostgreSQL backend moves to src/postgres/: it
// includes "verify.hpp" for what is now chain_walk.hpp (ChainWalk). Delete this file once no
// source includes it; SQLite's walk is src/sqlite/verify.hpp.
#pragma once

#include "chain_walk.hpp"
