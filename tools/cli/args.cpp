#include "cli/args.h"

#include <sstream>

#include "flashband/error.h"

namespace flashband::cli {

namespace {
[[noreturn]] void bad(const std::string& msg) { throw Error(ErrorCode::kInvalidArgument, msg); }
}  // namespace

Args::Args(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) bad("unexpected argument '" + a + "' (flags start with --)");
    a = a.substr(2);
    const auto eq = a.find('=');
    if (eq != std::string::npos) {
      values_[a.substr(0, eq)] = a.substr(eq + 1);
    } else if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
      values_[a] = argv[++i];
    } else {
      values_[a] = "";
    }
    used_[a.substr(0, a.find('='))] = false;
  }
}

bool Args::flag(const std::string& name) {
  auto it = values_.find(name);
  if (it == values_.end()) return false;
  used_[name] = true;
  if (!it->second.empty() && it->second != "true" && it->second != "1")
    bad("--" + name + " takes no value, got '" + it->second + "'");
  return true;
}

std::string Args::str(const std::string& name, const std::string& fallback) {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  used_[name] = true;
  if (it->second.empty()) bad("--" + name + " needs a value");
  return it->second;
}

int Args::integer(const std::string& name, int fallback) {
  const std::string s = str(name, "");
  if (s.empty()) return fallback;
  try {
    size_t pos = 0;
    const int v = std::stoi(s, &pos);
    if (pos != s.size()) throw 0;
    return v;
  } catch (...) {
    bad("--" + name + " expects an integer, got '" + s + "'");
  }
}

double Args::real(const std::string& name, double fallback) {
  const std::string s = str(name, "");
  if (s.empty()) return fallback;
  try {
    size_t pos = 0;
    const double v = std::stod(s, &pos);
    if (pos != s.size()) throw 0;
    return v;
  } catch (...) {
    bad("--" + name + " expects a number, got '" + s + "'");
  }
}

template <class T, class Parse>
std::vector<T> Args::list(const std::string& name, const char* what, Parse parse) {
  std::vector<T> out;
  const std::string s = str(name, "");
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t pos = 0;
      out.push_back(parse(item, &pos));
      if (pos != item.size()) throw 0;
    } catch (...) {
      bad("--" + name + " expects a comma-separated list of " + what + ", got '" + s + "'");
    }
  }
  return out;
}

std::vector<int> Args::int_list(const std::string& name) {
  return list<int>(name, "integers", [](const std::string& x, size_t* pos) { return std::stoi(x, pos); });
}

std::vector<float> Args::real_list(const std::string& name) {
  return list<float>(name, "numbers", [](const std::string& x, size_t* pos) { return std::stof(x, pos); });
}

void Args::finish() const {
  for (const auto& [name, used] : used_)
    if (!used) bad("unknown flag --" + name + " (see `flashband help`)");
}

}  // namespace flashband::cli
