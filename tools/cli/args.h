// A tiny flag parser for the flashband command line: --name value, --name=value, --flag.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace flashband::cli {

class Args {
 public:
  Args(int argc, char** argv, int first);
  bool flag(const std::string& name);  // --name present (no value)
  bool given(const std::string& name) const { return values_.count(name) > 0; }
  std::string str(const std::string& name, const std::string& fallback);
  int integer(const std::string& name, int fallback);
  double real(const std::string& name, double fallback);
  std::vector<int> int_list(const std::string& name);  // "1,2,3"; empty when absent
  std::vector<float> real_list(const std::string& name);  // "0.5,-2,7"; empty when absent
  // Throws on any flag that no accessor asked for, so a typo is never silently ignored.
  void finish() const;

 private:
  template <class T, class Parse>
  std::vector<T> list(const std::string& name, const char* what, Parse parse);
  std::map<std::string, std::string> values_;
  std::map<std::string, bool> used_;
};

}  // namespace flashband::cli
