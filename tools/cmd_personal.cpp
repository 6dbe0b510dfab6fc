// tools/cmd_personal.cpp — `factum forget DB SUBJECT` and `factum subjects DB`: erasure of
// personal data (personal.hpp). A forget deletes the subject's data key and appends the fact
// factum.SubjectForgotten in one transaction; it needs no key-encryption key. `subjects` lists
// every subject with a key or forgotten, with the state of its key; `subjects --lint` flags
// e-mail addresses where nothing can erase them.
#include <iostream>
#include <memory>
#include <string_view>

#include "cli.hpp"
#include "factum/eventstore/personal.hpp"
#include "options.hpp"
#include "output.hpp"
#include "store_access.hpp"

namespace factum::cli {
namespace {

struct ForgetOptions {
  std::string db;
  std::string subject;
  bool json = false;
};

int run_forget(const ForgetOptions& o) {
  EventStore store = open_writable(o.db);
  const ForgetResult r = store.forget(o.subject);
  if (o.json) {
    print_json(Json{{"subject", o.subject},
                    {"position", r.position},
                    {"had_key", r.was_known},
                    {"purged", r.purged}});
    return kOk;
  }
  std::cout << "forgot " << one_line(o.subject) << ": "
            << (r.was_known ? "its key is deleted" : "it had no key (nothing of it was encrypted)")
            << "; factum.SubjectForgotten at position " << r.position << '\n';
  if (!r.purged) {
    std::cout << "the key's old bytes are still in the store's WAL: readers kept the checkpoint "
                 "from finishing; the next checkpoint clears them\n";
  }
  return kOk;
}

struct SubjectsOptions {
  std::string db;
  bool json = false;
  bool lint = false;
};

// Whether `text` holds something shaped like an e-mail address (x@y.z): personal data where
// nothing can erase it (stream ids, actors, metadata values).
bool looks_like_email(std::string_view text) {
  for (std::size_t at = text.find('@'); at != std::string_view::npos; at = text.find('@', at + 1)) {
    const auto word = [](char c) { return c != ' ' && c != '@' && c != ',' && c != ';'; };
    if (at == 0 || !word(text[at - 1])) continue;
    std::size_t end = at + 1;
    while (end < text.size() && word(text[end])) ++end;
    const std::string_view domain = text.substr(at + 1, end - at - 1);
    const std::size_t dot = domain.rfind('.');
    if (dot != std::string_view::npos && dot > 0 && domain.size() - dot > 2) return true;
  }
  return false;
}

// `subjects --lint`: the places of the log that no forget can erase (stream ids, actors,
// metadata values other than factum's own) holding what looks like an e-mail address. A
// cheap check of the obvious cases, not a proof: names and other personal data are not found.
int run_lint(const EventStore& store) {
  std::uint64_t found = 0;
  const auto flag = [&](Position at, const std::string& where, std::string_view text) {
    if (!looks_like_email(text)) return;
    ++found;
    std::cout << "position " << at << ": " << where << " '" << one_line(std::string(text))
              << "' looks like an e-mail address, which no forget erases\n";
  };
  store.visit_all(1, [&](const EventView& e) {
    flag(e.position, "stream id", e.stream_id);
    flag(e.position, "actor", e.actor);
    for (const auto& [key, value] : e.metadata_values()) {
      if (key.rfind("factum.", 0) == 0) continue;
      flag(e.position, "metadata value " + one_line(key), value);
    }
    return true;
  });
  flush_output(stdout);
  if (found > 0) {
    throw CliError(std::to_string(found) +
                   " places of the log look like personal data that cannot be forgotten (keep "
                   "it in Personal<T> fields, under an opaque subject id: docs/erasure.md)");
  }
  std::cout << "no stream id, actor or metadata value looks like an e-mail address\n";
  return kOk;
}

std::string state_name(SubjectInfo::State s) {
  return s == SubjectInfo::State::active ? "active" : "forgotten";
}

int run_subjects(const SubjectsOptions& o) {
  const EventStore store = open_read_only(o.db);
  if (o.lint) return run_lint(store);
  const std::vector<SubjectInfo> subjects = list_subjects(store);
  if (o.json) {
    for (const SubjectInfo& s : subjects) {
      Json j{{"subject", s.subject},
             {"state", state_name(s.state)},
             {"kek", s.kek_id},
             {"created_at", format_time(s.created_at)}};
      if (s.forgotten_at) j["forgotten_at"] = format_time(*s.forgotten_at);
      print_json_line(j);
    }
    return kOk;
  }
  Table t({{"SUBJECT"}, {"STATE"}, {"KEK"}, {"KEY MADE"}, {"FORGOTTEN"}});
  for (const SubjectInfo& s : subjects) {
    t.add({s.subject, state_name(s.state), s.kek_id, format_time(s.created_at),
           s.forgotten_at ? format_time(*s.forgotten_at) : ""});
  }
  t.flush();
  flush_output(stdout);
  return kOk;
}

}  // namespace

void add_personal_commands(CLI::App& app, Action& action) {
  auto forget = std::make_shared<ForgetOptions>();
  CLI::App* f = app.add_subcommand(
      "forget", "Forget a subject: delete its data key, so its personal values read as erased");
  add_db_argument(*f, forget->db);
  f->add_option("subject", forget->subject, "The subject id (as in Personal<T>)")->required();
  add_json_flag(*f, forget->json);
  f->callback([&action, forget] { action = [forget] { return run_forget(*forget); }; });

  auto subjects = std::make_shared<SubjectsOptions>();
  CLI::App* s = app.add_subcommand(
      "subjects", "List the subjects of personal data, with the state of each one's key");
  add_db_argument(*s, subjects->db);
  add_json_flag(*s, subjects->json);
  s->add_flag("--lint", subjects->lint,
              "Instead, list the stream ids, actors and metadata values that look like e-mail "
              "addresses (personal data no forget can erase); exit 1 when there are any");
  s->callback([&action, subjects] { action = [subjects] { return run_subjects(*subjects); }; });
}

}  // namespace factum::cli
