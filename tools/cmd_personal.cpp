// tools/cmd_personal.cpp — `factum forget DB SUBJECT` and `factum subjects DB`: erasure of
// personal data (personal.hpp). A forget deletes the subject's data key and appends the fact
// factum.SubjectForgotten in one transaction; it needs no key-encryption key. `subjects` lists
// every subject with a key or forgotten, with the state of its key.
#include <memory>

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
};

std::string state_name(SubjectInfo::State s) {
  return s == SubjectInfo::State::active ? "active" : "forgotten";
}

int run_subjects(const SubjectsOptions& o) {
  const EventStore store = open_read_only(o.db);
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
  s->callback([&action, subjects] { action = [subjects] { return run_subjects(*subjects); }; });
}

}  // namespace factum::cli
