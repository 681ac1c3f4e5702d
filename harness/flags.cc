#include "harness/flags.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include <boost/program_options.hpp>
#include <simdjson.h>

#include "servers/registry.h"

namespace po = boost::program_options;

namespace lockcheck {

namespace {

std::string value_name_of(const ConfigField& f) {
  if (*f.value_name) return f.value_name;
  const std::string unit = f.unit;
  if (unit == "ms") return "MS";
  if (unit == "s") return "S";
  if (unit == "ppm") return "PPM";
  switch (f.kind) {
    case ConfigField::Kind::kInt:
    case ConfigField::Kind::kUint:
    case ConfigField::Kind::kDouble: return "N";
    case ConfigField::Kind::kList: return "LIST";
    case ConfigField::Kind::kBool: return "";
    default: return "TEXT";
  }
}

// The default of a row in words: its default_words, else the value RunConfig{} holds (with its unit).
std::string default_of(const ConfigField& f) {
  if (*f.default_words) return f.default_words;
  const nlohmann::json v = f.get(RunConfig{});
  return setting_text(v) + (v.is_number() && *f.unit ? std::string(" ") + f.unit : "");
}

void require_utf8(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (simdjson::validate_utf8(args[i].data(), args[i].size())) continue;
    const bool after_flag = i > 0 && args[i - 1].rfind("--", 0) == 0 &&
                            simdjson::validate_utf8(args[i - 1].data(), args[i - 1].size());
    throw ConfigError("argument " + std::to_string(i + 1) +
                      (after_flag ? " (the value of " + args[i - 1] + ")" : std::string()) + " is not valid UTF-8");
  }
}

// Every flag of spec once, tables in order; a name given twice is a programming error.
std::vector<const FlagSpec*> all_flags(const CommandSpec& spec) {
  std::vector<const FlagSpec*> flags;
  std::set<std::string> names;
  for (const auto& t : spec.tables) {
    for (const auto& f : t.flags) {
      for (const std::string& n : {f.name, f.old_name}) {
        if (!n.empty() && !names.insert(n).second) {
          throw std::logic_error("lockcheck " + spec.name + ": flag --" + n + " defined twice");
        }
      }
      flags.push_back(&f);
    }
  }
  return flags;
}

void add_po_option(po::options_description& desc, const std::string& name, const FlagSpec& f) {
  switch (f.arity) {
    case FlagArity::kSwitch: desc.add_options()(name.c_str(), ""); break;
    case FlagArity::kValue: desc.add_options()(name.c_str(), po::value<std::string>(), ""); break;
    case FlagArity::kRepeated:
      desc.add_options()(name.c_str(), po::value<std::vector<std::string>>()->composing(), "");
      break;
  }
}

std::string flag_label(const FlagSpec& f) {
  std::string s = f.short_name ? std::string("-") + f.short_name + ", --" + f.name : "--" + f.name;
  if (!f.value.empty()) s += " " + f.value;
  return s;
}

std::string meta_line(const FlagSpec& f) {
  std::vector<std::string> parts;
  if (!f.unit.empty()) parts.push_back("unit " + f.unit);
  if (!f.default_text.empty()) parts.push_back("default " + f.default_text);
  if (!f.config_key.empty()) parts.push_back("config key " + f.config_key);
  if (f.arity == FlagArity::kRepeated) parts.push_back("repeatable");
  if (!f.old_name.empty()) parts.push_back("was --" + f.old_name);
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : " · ") + p;
  return s;
}

// A command's flags by section: the groups in their order, then each table's own flags under its title.
struct Section {
  std::string title;
  std::vector<const FlagSpec*> flags;
  std::string listed_under;  // a table shown by reference
};
std::vector<Section> sections_of(const CommandSpec& spec) {
  std::vector<Section> sections;
  for (const auto& g : flag_groups()) {
    Section s{g, {}, ""};
    for (const auto& t : spec.tables) {
      if (!t.listed_under.empty()) continue;
      for (const auto& f : t.flags) {
        if (f.group == g) s.flags.push_back(&f);
      }
    }
    if (!s.flags.empty()) sections.push_back(std::move(s));
  }
  for (const auto& t : spec.tables) {
    if (!t.listed_under.empty()) {
      sections.push_back({t.title, {}, t.listed_under});
      continue;
    }
    Section s{t.title, {}, ""};
    for (const auto& f : t.flags) {
      if (std::find(flag_groups().begin(), flag_groups().end(), f.group) == flag_groups().end()) s.flags.push_back(&f);
    }
    if (!s.flags.empty()) sections.push_back(std::move(s));
  }
  return sections;
}

std::string listed_under_text(const std::string& command) {
  return "every setting flag of lockcheck " + command +
         " (cluster, lock, workload, faults, checking, output): see lockcheck help " + command;
}

// The words of value that are choices: "local|docker|ssh" -> local docker ssh; "FILE" -> none.
std::vector<std::string> value_choices(const FlagSpec& f) {
  std::vector<std::string> out = f.choices;
  if (f.value.find('|') != std::string::npos) {
    std::stringstream s(f.value);
    std::string w;
    while (std::getline(s, w, '|')) out.push_back(w);
  }
  return out;
}

// Text for a Markdown table cell or paragraph: a '|' would end the cell, a '<' start an HTML tag.
std::string markdown_text(const std::string& text) {
  std::string s;
  for (char c : text) {
    if (c == '|') {
      s += "\\|";
    } else if (c == '<') {
      s += "&lt;";
    } else {
      s += c;
    }
  }
  return s;
}

std::string anchor_of(const std::string& heading) {
  std::string a;
  for (char c : heading) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      a += static_cast<char>(std::tolower(u));
    } else if (c == ' ' || c == '-') {
      a += '-';
    }
  }
  return a;
}

}  // namespace

const std::vector<std::string>& flag_groups() {
  static const std::vector<std::string> groups = {"cluster", "lock", "workload", "faults", "checking", "output"};
  return groups;
}

std::vector<const std::vector<ConfigField>*> run_setting_tables() { return {&config_fields()}; }

FlagTable setting_flags(const std::vector<ConfigField>& rows, RunConfig& target, const std::string& title) {
  FlagTable t;
  t.title = title;
  for (const auto& f : rows) {
    if (!*f.flag) continue;
    FlagSpec s;
    s.name = f.flag;
    s.old_name = f.old_flag;
    s.arity = f.kind == ConfigField::Kind::kBool     ? FlagArity::kSwitch
              : f.kind == ConfigField::Kind::kObject ? FlagArity::kRepeated
                                                     : FlagArity::kValue;
    s.value = value_name_of(f);
    s.group = f.group;
    s.unit = f.unit;
    s.default_text = default_of(f);
    s.config_key = f.key;
    s.help = f.help;
    const ConfigField* row = &f;
    RunConfig* c = &target;
    s.set = [row, c](const std::string& text) { row->parse_flag(*c, text, std::string("--") + row->flag); };
    t.flags.push_back(std::move(s));
  }
  return t;
}

FlagTable server_option_flags(RunConfig& target, const std::string& title) {
  FlagTable t;
  t.title = title;
  for (const auto& e : server_registry()) {
    for (const auto& opt : e.spec->options()) {
      FlagSpec s;
      s.name = opt.flag;
      s.arity = FlagArity::kValue;
      s.value = !opt.choices.empty() ? [&] {
        std::string v;
        for (const auto& c : opt.choices) v += (v.empty() ? "" : "|") + c;
        return v;
      }()
                : opt.default_value.is_number_integer() ? (*opt.unit ? std::string(opt.unit) == "ms" ? "MS" : "S" : "N")
                : opt.default_value.is_boolean()        ? "true|false"
                                                        : "VALUE";
      s.group = "cluster";
      s.unit = opt.unit;
      s.default_text = setting_text(opt.default_value) + (opt.default_value.is_number() && *opt.unit ? std::string(" ") + opt.unit : "");
      s.config_key = opt.key;
      s.help = std::string(opt.help) + " (--server " + e.name + ")";
      const ServerOption* row = &opt;
      RunConfig* c = &target;
      s.set = [row, c](const std::string& text) {
        const std::string name = std::string("--") + row->flag;
        if (c->server_opts.contains(row->key)) throw ConfigError(name + ": given twice (also as --server-opt)");
        c->server_opts[row->key] = parse_server_option(*row, text, name);
      };
      t.flags.push_back(std::move(s));
    }
  }
  return t;
}

const ConfigField* find_run_setting(const std::string& given) {
  const std::string name = given.rfind("--", 0) == 0 ? given.substr(2) : given;
  for (const auto* rows : run_setting_tables()) {
    for (const auto& f : *rows) {
      if (name == f.key || (*f.flag && name == f.flag) || (*f.old_flag && name == f.old_flag)) return &f;
    }
  }
  return nullptr;
}

bool ParsedCommand::has(const std::string& flag) const {
  return std::find(given.begin(), given.end(), flag) != given.end();
}

ParsedCommand parse_command(const CommandSpec& spec, const std::vector<std::string>& args, std::ostream& err) {
  require_utf8(args);
  const std::vector<const FlagSpec*> flags = all_flags(spec);
  po::options_description desc;
  for (const FlagSpec* f : flags) {
    add_po_option(desc, f->short_name ? f->name + "," + f->short_name : f->name, *f);
    if (!f->old_name.empty()) add_po_option(desc, f->old_name, *f);
  }
  std::vector<std::string> words;
  desc.add_options()("lockcheck-positional", po::value(&words), "");
  po::positional_options_description pos;
  pos.add("lockcheck-positional", -1);
  // No abbreviations: --time is not --time-limit. A flag is its whole name, as the help, the reference and the
  // completion print it.
  const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).style(style).run(), vm);
  po::notify(vm);

  ParsedCommand parsed;
  for (const FlagSpec* f : flags) {
    const bool now = vm.count(f->name) > 0, old = !f->old_name.empty() && vm.count(f->old_name) > 0;
    if (!now && !old) continue;
    if (now && old) throw ConfigError("--" + f->name + ": given twice (also as --" + f->old_name + ")");
    if (old) {
      err << "lockcheck " << spec.name << ": note: --" << f->old_name << " is now --" << f->name
          << " (the old spelling still works)\n";
    }
    const po::variable_value& v = vm[old ? f->old_name : f->name];
    switch (f->arity) {
      case FlagArity::kSwitch: f->set("true"); break;
      case FlagArity::kValue: f->set(v.as<std::string>()); break;
      case FlagArity::kRepeated:
        for (const auto& x : v.as<std::vector<std::string>>()) f->set(x);
        break;
    }
    if (!f->note.empty()) err << "lockcheck " << spec.name << ": note: " << f->note << "\n";
    parsed.given.push_back(f->name);
  }
  const size_t allowed = spec.positional == Positional::kNone ? 0
                         : spec.positional == Positional::kOne ? 1
                                                               : words.size();
  if (words.size() > allowed) throw ConfigError("unexpected argument '" + words[allowed] + "'");
  parsed.positionals = std::move(words);
  return parsed;
}

std::string setting_text(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "on" : "off";
  if (v.is_string()) return v.get<std::string>().empty() ? "none" : v.get<std::string>();
  if (v.is_array()) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + (x.is_string() ? x.get<std::string>() : x.dump());
    return s.empty() ? "none" : s;
  }
  if (v.is_object()) return v.empty() ? "none" : v.dump();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::floor(d) == d && std::fabs(d) < 1e15) return std::to_string(static_cast<long long>(d));
    std::ostringstream s;
    s << d;
    return s.str();
  }
  return v.dump();
}

std::string wrap_text(const std::string& text, size_t indent, size_t first_column, size_t width) {
  std::istringstream in(text);
  std::string word, out;
  size_t column = first_column;
  bool line_start = true;
  while (in >> word) {
    if (!line_start && column + 1 + word.size() > width) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
      line_start = true;
    }
    if (!line_start) {
      out += " ";
      ++column;
    }
    out += word;
    column += word.size();
    line_start = false;
  }
  return out;
}

void print_command_help(const CommandSpec& spec, std::ostream& out) {
  constexpr size_t kColumn = 32, kWidth = 116;
  out << "usage: " << spec.synopsis << "\n\n" << wrap_text(spec.about, 0, 0, kWidth) << "\n";
  for (const auto& s : sections_of(spec)) {
    out << "\n" << s.title << ":\n";
    if (!s.listed_under.empty()) {
      out << "  " << wrap_text(listed_under_text(s.listed_under), 2, 2, kWidth) << "\n";
      continue;
    }
    for (const FlagSpec* f : s.flags) {
      const std::string label = "  " + flag_label(*f);
      out << label;
      size_t column = label.size();
      if (column + 2 > kColumn) {
        out << "\n" << std::string(kColumn, ' ');
      } else {
        out << std::string(kColumn - column, ' ');
      }
      out << wrap_text(f->help, kColumn, kColumn, kWidth) << "\n";
      const std::string meta = meta_line(*f);
      if (!meta.empty()) out << std::string(kColumn, ' ') << wrap_text(meta, kColumn, kColumn, kWidth) << "\n";
    }
  }
}

void write_reference(const std::vector<CommandSpec>& commands, const std::string& exit_statuses, std::ostream& out) {
  out << "# lockcheck command-line reference\n\n"
      << "<!-- Generated by `lockcheck help --reference` from the tables that parse the flags. Do not edit: remake "
         "it with `build/lockcheck help --reference > docs/cli.md` (the docs tests compare the two). -->\n\n"
      << "Every command and flag, generated by the binary from the tables its parser uses. Per flag: its value, "
         "unit, real default and the key a `config.json` or a matrix entry gives it. "
         "`lockcheck COMMAND --help` (or `lockcheck help COMMAND`) prints the same for one command; every command "
         "takes `--dry-run`.\n\n";
  out << "Commands:";
  for (const auto& c : commands) out << " [" << c.name << "](#" << anchor_of("lockcheck " + c.name) << ")";
  out << "\n\n## Exit status\n\n| status | meaning |\n| --- | --- |\n" << exit_statuses << "\n";
  for (const auto& c : commands) {
    out << "## lockcheck " << c.name << "\n\n`" << c.synopsis << "`\n\n" << markdown_text(c.about) << "\n";
    for (const auto& s : sections_of(c)) {
      out << "\n### " << c.name << ": " << s.title << "\n\n";
      if (!s.listed_under.empty()) {
        out << "Every setting flag of [lockcheck " << s.listed_under << "](#"
            << anchor_of("lockcheck " + s.listed_under)
            << ") (cluster, lock, workload, faults, checking, output).\n";
        continue;
      }
      out << "| flag | unit | default | config key | meaning |\n| --- | --- | --- | --- | --- |\n";
      for (const FlagSpec* f : s.flags) {
        std::string meaning = f->help;
        if (f->arity == FlagArity::kRepeated && meaning.find("repeatable") == std::string::npos) {
          meaning += " (repeatable)";
        }
        if (!f->old_name.empty()) meaning += " (was `--" + f->old_name + "`, still taken with a note)";
        out << "| `" << markdown_text(flag_label(*f)) << "` | " << f->unit << " | " << markdown_text(f->default_text)
            << " | " << (f->config_key.empty() ? "" : "`" + f->config_key + "`") << " | " << markdown_text(meaning)
            << " |\n";
      }
    }
    out << "\n";
  }
}

void write_bash_completion(const std::vector<CommandSpec>& commands, std::ostream& out) {
  std::string names;
  for (const auto& c : commands) names += (names.empty() ? "" : " ") + c.name;
  out << "# bash completion for lockcheck, generated by `lockcheck completion bash` from the tables that parse its\n"
         "# flags. Installed as /usr/share/bash-completion/completions/lockcheck; by hand:\n"
         "#   source <(lockcheck completion bash)\n"
         "_lockcheck() {\n"
         "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
         "  local commands=\""
      << names
      << "\"\n"
         "  COMPREPLY=()\n"
         "  if [ \"$COMP_CWORD\" -le 1 ]; then\n"
         "    COMPREPLY=($(compgen -W \"$commands --help --version\" -- \"$cur\"))\n"
         "    return 0\n"
         "  fi\n"
         "  local flags=\"\" words=\"\"\n"
         "  case \"${COMP_WORDS[1]}\" in\n";
  for (const auto& c : commands) {
    std::string flags;
    std::map<std::string, std::vector<std::string>> by_action;  // case pattern action -> flags
    for (const auto& t : c.tables) {
      for (const auto& f : t.flags) {
        flags += (flags.empty() ? "" : " ") + std::string("--") + f.name;
        if (f.short_name) flags += std::string(" -") + f.short_name;
        if (f.arity == FlagArity::kSwitch) continue;
        std::string action;
        const std::vector<std::string> choices = value_choices(f);
        if (!choices.empty()) {
          std::string w;
          for (const auto& x : choices) w += (w.empty() ? "" : " ") + x;
          action = "COMPREPLY=($(compgen -W \"" + w + "\" -- \"$cur\"))";
        } else if (f.value.find("DIR") != std::string::npos) {
          action = "COMPREPLY=($(compgen -d -- \"$cur\"))";
        } else if (f.value.find("FILE") != std::string::npos || f.value == "PROGRAM") {
          action = "COMPREPLY=($(compgen -f -- \"$cur\"))";
        } else {
          action = ":";  // a number or a name: nothing to offer
        }
        by_action[action].push_back("--" + f.name);
      }
    }
    out << "    " << c.name << ")\n      flags=\"" << flags << "\"\n";
    if (!by_action.empty()) {
      out << "      case \"$prev\" in\n";
      for (const auto& [action, fl] : by_action) {
        std::string pattern;
        for (const auto& f : fl) pattern += (pattern.empty() ? "" : "|") + f;
        out << "        " << pattern << ") " << action << "; return 0 ;;\n";
      }
      out << "      esac\n";
    }
    const std::string pn = c.positional_name;
    out << "      words=\""
        << (c.positional == Positional::kNone ? ""
            : pn == "COMMAND"                 ? "commands"
            : pn == "SHELL"                   ? "bash"
            : pn.find("FILE") != std::string::npos ? "files"
                                                   : "folders")
        << "\" ;;\n";
  }
  out << "  esac\n"
         "  if [[ $cur == -* ]]; then\n"
         "    COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n"
         "  elif [ \"$words\" = commands ]; then\n"
         "    COMPREPLY=($(compgen -W \"$commands\" -- \"$cur\"))\n"
         "  elif [ \"$words\" = folders ]; then\n"
         "    COMPREPLY=($(compgen -d -- \"$cur\"))\n"
         "  elif [ \"$words\" = files ]; then\n"
         "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
         "  elif [ -n \"$words\" ]; then\n"
         "    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
         "  fi\n"
         "  return 0\n"
         "}\n"
         "complete -o filenames -F _lockcheck lockcheck\n";
}

}  // namespace lockcheck
