// factum/projections/projection.hpp — what a projection is: a named, versioned fold of the
// log into a read model, fed by a ProjectionEngine (projection_engine.hpp).
//
//   class Balances : public factum::Projection {
//    public:
//     std::string name() const override { return "balances"; }
//     std::uint32_t version() const override { return 1; }
//     std::vector<std::string> event_types() const override { return {"bank.Deposited"}; }
//     void reset(factum::ProjectionContext& ctx) override {
//       ctx.sql().execute("CREATE TABLE " + ctx.table("balances") +
//                         " (account TEXT PRIMARY KEY, cents INTEGER NOT NULL)");
//     }
//     void apply(const factum::RecordedEvent& e, factum::ProjectionContext& ctx) override {
//       ctx.sql().execute("INSERT INTO " + ctx.table("balances") + " VALUES (?1, ?2) ON CONFLICT"
//                         " (account) DO UPDATE SET cents = cents + excluded.cents", {...});
//     }
//   };
//
// Read models in the store's file live in tables the projection names through
// ProjectionContext::table("balances"): the engine gives each generation of the read model its
// own physical tables ("balances__g2") and serves queries through a view with the logical name
// ("SELECT ... FROM balances"), so a rebuild fills fresh tables while the old ones keep serving,
// and the switch is one transaction (blue/green).
//
// Thread-safety: the engine calls reset and apply of one projection from one thread at a time
// (the projection's thread, or an appending thread for inline projections), never
// concurrently; name/version/event_types/query must be constant.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "factum/eventstore/event.hpp"
#include "factum/eventstore/event_id.hpp"
#include "factum/eventstore/query.hpp"
#include "factum/eventstore/sql.hpp"

namespace factum {
namespace detail {
class ProjectionContextAccess;
}

// Identifies an event for an external, at-least-once target: apply an effect only if its key
// was not applied before. The position orders keys; the id is unique across stores.
struct IdempotencyKey {
  Position position = 0;
  EventId id;
  // "<position>:<id>", e.g. "42:0190a1b2-...".
  std::string to_string() const;

  friend bool operator==(const IdempotencyKey&, const IdempotencyKey&) = default;
};

// Where a projection's read model lives.
enum class ProjectionTarget {
  store,     // tables in the store's file: changes and checkpoint commit together (exactly once)
  external,  // anything else: delivered at least once, with an IdempotencyKey
};

// What reset and apply see.
// Thread-safety: valid only during the call it is passed to.
class ProjectionContext {
 public:
  ProjectionContext(Sql* sql, std::string projection, std::uint64_t generation);

  // The store's file, inside the transaction that also saves the projection's checkpoint.
  // Throws InvalidArgument for an external projection (it has no transaction).
  Sql& sql();
  // The physical name of the read-model table `logical` in the generation being written, e.g.
  // "balances" -> "balances__g3". Readers query `logical`, a view on the serving generation.
  // Tables a projection writes must be created in reset() under this name. Throws
  // InvalidArgument unless `logical` is an identifier ([A-Za-z_][A-Za-z0-9_]*, no "__g"), and,
  // in reset(), when another projection of the file uses that name (compared without case) or
  // the file holds a table, index or view of that name that is not this projection's.
  std::string table(std::string_view logical);
  // The event being applied (in apply): its position and id.
  const IdempotencyKey& key() const noexcept { return key_; }
  // The generation being written: 1 for the first build, +1 per rebuild.
  std::uint64_t generation() const noexcept { return generation_; }
  const std::string& projection() const noexcept { return projection_; }

 private:
  friend class detail::ProjectionContextAccess;  // the engine's view (projections/src)
  void check_free(std::string_view logical);

  Sql* sql_;
  std::string projection_;
  std::uint64_t generation_;
  IdempotencyKey key_;
  std::set<std::string> tables_;
  bool creating_ = false;
};

class Projection {
 public:
  virtual ~Projection() = default;
  // Unique in the store; also its checkpoint's name. Letters, digits, '_', '-', '.'.
  virtual std::string name() const = 0;
  // Raise it when apply's logic changes: the engine rebuilds the read model from position 1.
  virtual std::uint32_t version() const = 0;
  // The event types apply wants (empty: every event).
  virtual std::vector<std::string> event_types() const { return {}; }
  // The events apply wants as a query (DCB, query.hpp): when it has a value, apply gets exactly
  // the events it matches, in position order, read as SubscriptionFilter::query reads them (an
  // item with tags through the tag index), and event_types() must be empty; the checkpoint
  // still moves over the events it does not match, and rebuilds, exactly-once updates, inline
  // mode and forget() work as without it. Like the version, it must be constant: change it
  // with a new version() (the read model is rebuilt). add() throws InvalidArgument for an
  // invalid query (validate_query) or one given with event types. Default: none.
  virtual std::optional<Query> query() const { return std::nullopt; }
  // Creates an empty read model for ctx.generation() (store target: CREATE TABLE through
  // ctx.table; external target: clear the target). Runs inside the engine's write
  // transaction: it must not call the store's append or write_sql (deadlock).
  virtual void reset(ProjectionContext& ctx) = 0;
  // Applies one event. Throwing reports a failure (see ProjectionOptions::on_failure); the
  // event's changes are rolled back (store target).
  virtual void apply(const RecordedEvent& event, ProjectionContext& ctx) = 0;
  // A subject of personal data was forgotten (a factum.SubjectForgotten fact; personal.hpp):
  // remove what the read model derived from its values. Called for every such fact whatever
  // event_types() names, in the same transaction as the checkpoint (store target), before
  // apply() sees the fact (only when event_types() is empty or names it). Throwing is a failure
  // of the fact's event, as for apply. Default: nothing.
  virtual void forget(std::string_view subject, ProjectionContext& ctx);
};

}  // namespace factum
