// samples/feed/demo.cpp — planning a realistic history and carrying it out.
#include "demo.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <random>

#include "rules.hpp"

namespace feed {
namespace {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::minutes;
using std::chrono::seconds;

constexpr std::array<const char*, 100> kNames = {
    "alice", "bob",    "carol",   "dave",   "erin",  "frank",  "grace", "heidi",  "ivan",  "judy",
    "ken",   "laura",  "mallory", "nina",   "oscar", "peggy",  "quinn", "rupert", "sybil", "trent",
    "uma",   "victor", "wendy",   "xavier", "yara",  "zoe",    "amir",  "bea",    "chen",  "dara",
    "eli",   "fatima", "gus",     "hana",   "ines",  "jonas",  "kemal", "lena",   "marco", "noor",
    "olga",  "pablo",  "rosa",    "sami",   "tomas", "ursula", "vera",  "wei",    "yusuf", "zara",
    "anton", "bianca", "cyrus",   "dmitri", "esme",  "felix",  "gita",  "hugo",   "iris",  "jakob",
    "kira",  "luca",   "maya",    "nils",   "omar",  "priya",  "reza",  "sofia",  "theo",  "umar",
    "vik",   "willa",  "xena",    "yosef",  "zhen",  "arjun",  "bruno", "clara",  "diego", "elin",
    "farah", "gianni", "hiro",    "ilse",   "jade",  "kofi",   "lotte", "mateo",  "nadia", "otto",
    "paula", "radu",   "saskia",  "tariq",  "ulla",  "vasco",  "wanda", "ximena", "yuki",  "zeno"};

// Surnames of the users' display names (personal data: erased by `forget`), by place in kNames.
constexpr std::array<const char*, 16> kSurnames = {
    "Liddell", "Brown",    "Okafor", "Novak", "Lindqvist", "Moreau",  "Tanaka", "Costa",
    "Haddad",  "Kowalski", "Reyes",  "Singh", "Andersen",  "Fischer", "Mensah", "Rossi"};

// "Alice Liddell": the display name of the i-th user named `name`.
std::string display_name(const std::string& name, std::size_t i) {
  std::string first = name;
  while (!first.empty() && first.back() >= '0' && first.back() <= '9') first.pop_back();
  if (!first.empty()) first[0] = static_cast<char>(first[0] - 'a' + 'A');
  return first + " " + kSurnames[(i * 7 + i / kNames.size()) % kSurnames.size()];
}

// Activity by hour of day (UTC): quiet at night, busy at lunch and in the evening.
constexpr std::array<double, 24> kActivity = {0.3, 0.2, 0.1, 0.1, 0.1, 0.2, 0.4, 0.8,
                                              1.0, 1.0, 0.9, 1.0, 1.3, 1.2, 1.0, 1.0,
                                              1.1, 1.3, 1.6, 1.9, 2.0, 1.8, 1.2, 0.6};

constexpr std::array<const char*, 10> kOpeners = {
    "Just shipped", "Finally tried",    "Can't stop thinking about", "Hot take on",
    "TIL about",    "Anyone else into", "Spent the morning on",      "Reading up on",
    "Loving",       "Not convinced by"};
constexpr std::array<const char*, 20> kTopics = {
    "event sourcing",       "sourdough",           "the new bike lanes", "SQLite's WAL mode",
    "trail running",        "jazz records",        "the night market",   "the harbour walk",
    "mechanical keyboards", "tomato seedlings",    "a tiny ray tracer",  "the eclipse",
    "board games",          "fermented hot sauce", "chess openings",     "the city library",
    "solar panels",         "vintage cameras",     "bird watching",      "the jazz festival"};
constexpr std::array<const char*, 8> kClosers = {"",
                                                 " — highly recommend.",
                                                 " Thoughts?",
                                                 " 10/10.",
                                                 " What a week.",
                                                 " More soon.",
                                                 " Send help.",
                                                 " 🙂"};

// Portable randomness: mt19937_64's output is fixed by the standard; the rest is ours.
class Random {
 public:
  explicit Random(std::uint64_t seed) : engine_(seed) {}
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return uniform() < p; }
  std::size_t below(std::size_t n) {
    return std::min(n - 1, static_cast<std::size_t>(uniform() * static_cast<double>(n)));
  }
  microseconds exponential(microseconds mean) {
    return microseconds{
        static_cast<std::int64_t>(-std::log1p(-uniform()) * static_cast<double>(mean.count()))};
  }
  microseconds between(microseconds lo, microseconds hi) {
    return lo + microseconds{
                    static_cast<std::int64_t>(uniform() * static_cast<double>((hi - lo).count()))};
  }
  // An index drawn with probability proportional to weights[i].
  std::size_t weighted(const std::vector<double>& weights) {
    double total = 0;
    for (double w : weights) total += w;
    double x = uniform() * total;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if ((x -= weights[i]) < 0) return i;
    }
    return weights.size() - 1;
  }

 private:
  std::mt19937_64 engine_;
};

struct Member {
  std::string name;
  factum::Timestamp joined;
  double popularity = 0;
};

// A stretch of time a user is online: they post and like then.
struct Visit {
  factum::Timestamp start;
  microseconds length{0};
};

struct FollowPlan {
  std::size_t follower = 0, followee = 0;
  factum::Timestamp at;
  std::optional<factum::Timestamp> until;  // unfollowed then
};

struct PostPlan {
  std::size_t author = 0;
  factum::Timestamp at;
  std::string text;
  double appeal = 0;
  bool viral = false;
};

class Planner {
 public:
  explicit Planner(const DemoOptions& o)
      : random_(o.seed),
        users_(static_cast<std::size_t>(o.users)),
        end_(o.end),
        start_(o.end - hours(24) * o.days),
        days_(static_cast<std::size_t>(o.days)) {}

  std::vector<Action> plan() {
    plan_members();
    plan_visits();
    plan_follows();
    plan_posts();
    plan_likes();
    std::stable_sort(actions_.begin(), actions_.end(),
                     [](const Action& a, const Action& b) { return a.arrival < b.arrival; });
    return std::move(actions_);
  }

 private:
  // A time in [from, to) drawn by the day/night rhythm.
  factum::Timestamp busy_time(factum::Timestamp from, factum::Timestamp to) {
    if (to <= from) return from;
    for (int tries = 0;; ++tries) {
      const factum::Timestamp t = from + random_.between(microseconds{0}, to - from);
      const auto hour = (t.time_since_epoch() / hours(1)) % 24;
      if (tries > 100 || random_.uniform() * 2.0 < kActivity[static_cast<std::size_t>(hour)])
        return t;
    }
  }

  void add(Action::Kind kind, factum::Timestamp at, std::string user, std::string other = {}) {
    Action a;
    a.kind = kind;
    a.at = a.arrival = at;
    a.user = std::move(user);
    a.other = std::move(other);
    actions_.push_back(std::move(a));
  }

  void plan_members() {
    std::vector<std::size_t> rank(users_);
    for (std::size_t i = 0; i < users_; ++i) rank[i] = i;
    for (std::size_t i = users_ - 1; i > 0; --i) std::swap(rank[i], rank[random_.below(i + 1)]);
    for (std::size_t i = 0; i < users_; ++i) {
      Member m;
      m.name = std::string(kNames[i % kNames.size()]) +
               (i < kNames.size() ? "" : std::to_string(i / kNames.size()));
      m.joined = i == 0                ? start_ + minutes(1)
                 : random_.chance(0.9) ? start_ + random_.between(minutes(1), hours(6))
                                       : busy_time(start_ + hours(6), end_ - hours(6));
      m.popularity = 1.0 / std::pow(static_cast<double>(rank[i] + 1), 0.9);
      members_.push_back(m);
      add(Action::Kind::join, m.joined, m.name);
      actions_.back().text = display_name(m.name, i);
    }
  }

  // Each user comes online a few times a day, for a few minutes to most of an hour.
  void plan_visits() {
    for (const Member& m : members_) {
      std::vector<Visit> visits;
      const std::size_t count = days_ * (2 + random_.below(6));
      for (std::size_t i = 0; i < count; ++i) {
        visits.push_back({busy_time(m.joined, end_), random_.between(minutes(3), minutes(40))});
      }
      std::sort(visits.begin(), visits.end(),
                [](const Visit& a, const Visit& b) { return a.start < b.start; });
      visits_.push_back(std::move(visits));
    }
  }

  // A moment of one of `user`'s visits at or after `from` (std::nullopt when none is left).
  std::optional<factum::Timestamp> online_after(std::size_t user, factum::Timestamp from) {
    for (const Visit& v : visits_[user]) {
      if (v.start + v.length <= from) continue;
      const factum::Timestamp begin = std::max(v.start, from);
      return begin + random_.between(microseconds{0}, v.start + v.length - begin);
    }
    return std::nullopt;
  }

  void plan_follows() {
    for (std::size_t u = 0; u < users_; ++u) {
      std::vector<double> weights;
      for (const Member& m : members_) weights.push_back(m.popularity);
      weights[u] = 0;  // not oneself
      const std::size_t k = std::min(users_ - 1, 5 + random_.below(16));
      for (std::size_t i = 0; i < k; ++i) {
        const std::size_t other = random_.weighted(weights);
        weights[other] = 0;  // not twice
        plan_follow(u, other);
      }
    }
  }

  void plan_follow(std::size_t u, std::size_t other) {
    FollowPlan f{u, other, {}, std::nullopt};
    f.at = random_.chance(0.7) ? members_[u].joined + seconds(1) + random_.exponential(minutes(20))
                               : busy_time(members_[u].joined, end_);
    f.at = std::max(f.at, members_[other].joined + minutes(1));
    if (f.at >= end_ - minutes(1)) return;
    add(Action::Kind::follow, f.at, members_[u].name, members_[other].name);
    if (random_.chance(0.06) && f.at + hours(1) < end_) {
      f.until = busy_time(f.at + hours(1), end_);
      add(Action::Kind::unfollow, *f.until, members_[u].name, members_[other].name);
    }
    follows_.push_back(f);
  }

  std::string post_text() {
    return std::string(kOpeners[random_.below(kOpeners.size())]) + " " +
           kTopics[random_.below(kTopics.size())] + kClosers[random_.below(kClosers.size())];
  }

  void plan_posts() {
    std::vector<double> weights;
    for (const Member& m : members_) weights.push_back(0.2 + m.popularity);
    const auto count = static_cast<std::size_t>(1.5 * static_cast<double>(users_ * days_));
    for (std::size_t i = 0; i < count; ++i) {
      PostPlan p;
      p.author = random_.weighted(weights);
      const auto& visits = visits_[p.author];
      const Visit& v = visits[random_.below(visits.size())];
      p.at = std::max(v.start + random_.between(microseconds{0}, v.length),
                      members_[p.author].joined + minutes(10));
      if (p.at >= end_ - minutes(2)) continue;
      p.text = post_text();
      p.appeal = 0.3 + random_.uniform();
      p.viral = random_.chance(0.08);
      posts_.push_back(std::move(p));
    }
    std::stable_sort(posts_.begin(), posts_.end(),
                     [](const PostPlan& a, const PostPlan& b) { return a.at < b.at; });
    for (const PostPlan& p : posts_) {
      add(Action::Kind::post, p.at, members_[p.author].name);
      actions_.back().text = p.text;
    }
  }

  // Who follows `author` at time t.
  std::vector<std::size_t> followers_at(std::size_t author, factum::Timestamp t) const {
    std::vector<std::size_t> out;
    for (const FollowPlan& f : follows_) {
      if (f.followee == author && f.at < t && (!f.until || *f.until > t)) out.push_back(f.follower);
    }
    return out;
  }

  void plan_likes() {
    for (std::size_t i = 0; i < posts_.size(); ++i) {
      const PostPlan& p = posts_[i];
      std::vector<bool> liked(users_, false);
      liked[p.author] = true;  // authors do not like their own posts here
      for (std::size_t f : followers_at(p.author, p.at)) {
        if (random_.chance(0.6 * p.appeal)) plan_like(i, f, liked);
      }
      const std::size_t crowd = p.viral ? 20 + random_.below(60) : random_.below(4);
      for (std::size_t k = 0; k < crowd; ++k) plan_like(i, random_.below(users_), liked);
    }
  }

  // `user` likes post `i`: at once, notified (the burst after a post), or on their next
  // visit. A few likes reach the log late.
  void plan_like(std::size_t i, std::size_t user, std::vector<bool>& liked) {
    if (liked[user]) return;
    const PostPlan& p = posts_[i];
    const factum::Timestamp first = p.at + seconds(5);
    const std::optional<factum::Timestamp> at =
        random_.chance(0.4) ? first + random_.exponential(minutes(8)) : online_after(user, first);
    if (!at || *at >= end_ || *at <= members_[user].joined) return;
    plan_like_at(i, user, *at);
    liked[user] = true;
  }

  void plan_like_at(std::size_t i, std::size_t user, factum::Timestamp at) {
    add(Action::Kind::like, at, members_[user].name);
    Action& a = actions_.back();
    a.post = i;
    const double r = random_.uniform();
    if (r < 0.03) a.arrival = at + random_.between(minutes(15), hours(3));  // synced late
    if (r >= 0.03 && r < 0.06) a.arrival = at + random_.between(minutes(1), minutes(8));
    a.arrival = std::min(a.arrival, end_);
  }

  Random random_;
  std::size_t users_;
  factum::Timestamp end_, start_;
  std::size_t days_;
  std::vector<Member> members_;
  std::vector<std::vector<Visit>> visits_;  // per member, by start
  std::vector<FollowPlan> follows_;
  std::vector<PostPlan> posts_;
  std::vector<Action> actions_;
};

}  // namespace

std::vector<Action> plan_demo(const DemoOptions& options) {
  if (options.users < 2 || options.users > 1000)
    throw FeedError("demo users must be between 2 and 1000, not " + std::to_string(options.users));
  if (options.days < 1 || options.days > 30)
    throw FeedError("demo days must be between 1 and 30, not " + std::to_string(options.days));
  return Planner(options).plan();
}

void DemoRunner::run(const Action& a) {
  switch (a.kind) {
    case Action::Kind::join:
      feed_.join(a.user, a.at, a.text);
      ++summary_.users;
      break;
    case Action::Kind::follow:
      feed_.follow(a.user, a.other, a.at);
      ++summary_.follows;
      break;
    case Action::Kind::unfollow:
      feed_.unfollow(a.user, a.other, a.at);
      ++summary_.unfollows;
      break;
    case Action::Kind::post:
      posts_.push_back(feed_.post(a.user, a.text, a.at));
      ++summary_.posts;
      break;
    case Action::Kind::like:
      feed_.like(a.user, posts_.at(a.post), a.at);
      ++summary_.likes;
      summary_.last_liker = a.user;
      summary_.last_liked = posts_.at(a.post);
      if (a.arrival > a.at) ++summary_.delayed;
      break;
  }
}

}  // namespace feed
