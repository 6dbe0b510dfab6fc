// samples/common/key_file.cpp — the KEK file of a sample's personal data (see key_file.hpp).
#include "key_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <factum/eventstore/event_store.hpp>
#include <factum/eventstore/location.hpp>
#include <factum/eventstore/personal.hpp>
#include <store_location.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

namespace factum::samples {
namespace {

// How many subjects of the store at `db` have a key (were not forgotten); 0 without a store.
std::size_t keys_in(const std::filesystem::path& db) {
  if (!factum::samples::store_exists(db)) return 0;
  factum::StoreOptions options;
  options.create_if_missing = false;
  const auto store = factum::EventStore::open(db, options);
  const auto subjects = factum::list_subjects(store);
  return static_cast<std::size_t>(std::count_if(
      subjects.begin(), subjects.end(),
      [](const factum::SubjectInfo& s) { return s.state == factum::SubjectInfo::State::active; }));
}

std::string error_text(int error) { return std::strerror(error); }

// Writes 32 random bytes (the kernel's CSPRNG) to a new file `kek`, readable by its owner only.
void create_key_file(const std::filesystem::path& kek) {
  std::array<char, 32> key{};
  std::ifstream random("/dev/urandom", std::ios::binary);
  if (!random.read(key.data(), key.size())) {
    throw std::runtime_error("cannot read 32 random bytes from /dev/urandom for the key file '" +
                             kek.string() + "'");
  }
  const int fd = ::open(kek.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw std::runtime_error("cannot create the key file '" + kek.string() +
                             "': " + error_text(errno));
  }
  const bool written =
      ::write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size()) && ::fsync(fd) == 0;
  const int error = errno;
  ::close(fd);
  key.fill(0);
  if (!written) {
    std::filesystem::remove(kek);
    throw std::runtime_error("cannot write the key file '" + kek.string() +
                             "': " + error_text(error));
  }
}

}  // namespace

std::filesystem::path key_file_for(const std::filesystem::path& db,
                                   const std::optional<std::filesystem::path>& given,
                                   std::string_view program) {
  if (given) return *given;
  if (factum::is_server_location(db.string())) {
    throw std::runtime_error(
        "a store on a PostgreSQL server needs --kek FILE: the key-encryption key of its "
        "personal data (32 random bytes; " +
        std::string(program) +
        " creates the file when it is missing and the store holds no keys yet), kept off the "
        "server");
  }
  return db.string() + ".kek";
}

void use_key_file(factum::StoreOptions& options, const std::filesystem::path& db,
                  const std::filesystem::path& kek, bool create, std::string_view holders) {
  if (!std::filesystem::exists(kek)) {
    if (const std::size_t keys = keys_in(db); keys > 0) {
      throw std::runtime_error(
          "the key file '" + kek.string() + "' is missing, and '" +
          factum::shown_location(db.string()) + "' holds the keys of " + std::to_string(keys) +
          " " + std::string(holders) +
          " wrapped by it: without it their personal values cannot be read (give the key file "
          "with --kek)");
    }
    if (!create) return;  // nothing personal to read
    create_key_file(kek);
  }
  options.personal_data.key_provider = std::make_shared<factum::FileKeyProvider>(kek);
}

}  // namespace factum::samples
