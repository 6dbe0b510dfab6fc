// factum/projections/checkpoint_store.hpp — durable checkpoints: name -> position, in a table
// of the store's own file (factum_checkpoints), so a checkpoint and a read model written in
// the same transaction commit together.
//
//   factum::CheckpointStore checkpoints(store);
//   const factum::Position from = checkpoints.load("mailer");    // 0 when never saved
//   ... handle events up to position p ...
//   checkpoints.save("mailer", p);                              // durable when it returns
//
// Inside a transaction of your own (EventStore::write_sql or an AppendTransaction), use the
// static overloads taking a Sql&: the checkpoint then commits or rolls back with your writes.
//
// Errors: StorageError (the file), InvalidArgument (an empty name).
// Thread-safety: a CheckpointStore may be shared between threads; each call is one
// transaction. Checkpoints written by other processes are seen by the next load.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "factum/eventstore/event.hpp"
#include "factum/eventstore/event_store.hpp"
#include "factum/eventstore/sql.hpp"

namespace factum {

struct Checkpoint {
  std::string name;
  Position position = 0;
  Timestamp updated_at{};  // when it was last saved

  friend bool operator==(const Checkpoint&, const Checkpoint&) = default;
};

class CheckpointStore {
 public:
  // Writes nothing: the checkpoint table is made by the first save, in its transaction (until
  // then a missing table reads as "no checkpoints"). The store must outlive this object.
  explicit CheckpointStore(EventStore& store);

  // The saved position of `name`; 0 when it was never saved.
  Position load(std::string_view name) const;
  // Saves `position` for `name` in its own transaction (durable per the store's durability).
  void save(std::string_view name, Position position);
  // Deletes the checkpoint; true when there was one.
  bool remove(std::string_view name);
  // Every checkpoint, by name.
  std::vector<Checkpoint> list() const;

  // The same, inside the caller's transaction.
  static void create_table(Sql& sql);
  static Position load(Sql& sql, std::string_view name);
  static void save(Sql& sql, std::string_view name, Position position);
  static bool remove(Sql& sql, std::string_view name);

 private:
  EventStore* store_;
};

}  // namespace factum
