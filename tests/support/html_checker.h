// A small well-formedness checker for the HTML the report writes (which closes every element it opens): it
// scans tags, skips comments, the doctype and the bodies of <script> and <style>, and checks that every
// element but the void ones is closed in order. Enough to catch an unbalanced <svg>, <g> or <rect>, and to
// count elements by tag, class and attribute.
#pragma once

#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace lockcheck {
namespace report_test {

struct Tag {
  std::string name;  // lower case
  std::map<std::string, std::string> attrs;
  bool closing = false;       // </name>
  bool self_closing = false;  // <name ... />
  size_t pos = 0;             // offset of '<'
  int depth = 0;              // nesting depth of the element (for start tags)
};

inline bool has_class(const Tag& t, const std::string& cls) {
  auto it = t.attrs.find("class");
  if (it == t.attrs.end()) return false;
  std::istringstream in(it->second);
  std::string c;
  while (in >> c) {
    if (c == cls) return true;
  }
  return false;
}

// Parses html into its tags. Returns false with a message in *error when it is not well-formed.
inline bool parse_tags(const std::string& html, std::vector<Tag>* tags, std::string* error) {
  static const std::set<std::string> kVoid = {"area",  "base", "br",   "col",    "embed", "hr", "img",
                                              "input", "link", "meta", "source", "track", "wbr"};
  std::vector<std::string> stack;
  size_t i = 0;
  auto fail = [&](const std::string& msg) {
    *error = msg + " at offset " + std::to_string(i);
    return false;
  };
  while (i < html.size()) {
    size_t lt = html.find('<', i);
    if (lt == std::string::npos) break;
    i = lt;
    if (html.compare(i, 4, "<!--") == 0) {
      size_t end = html.find("-->", i);
      if (end == std::string::npos) return fail("unterminated comment");
      i = end + 3;
      continue;
    }
    if (html.compare(i, 2, "<!") == 0) {
      size_t end = html.find('>', i);
      if (end == std::string::npos) return fail("unterminated doctype");
      i = end + 1;
      continue;
    }
    Tag t;
    t.pos = i;
    size_t j = i + 1;
    if (j < html.size() && html[j] == '/') {
      t.closing = true;
      ++j;
    }
    size_t name_start = j;
    while (j < html.size() && (std::isalnum(static_cast<unsigned char>(html[j])) || html[j] == '-')) ++j;
    if (j == name_start) return fail("'<' not followed by a tag name (unescaped text?)");
    for (size_t k = name_start; k < j; ++k) t.name.push_back(static_cast<char>(std::tolower(html[k])));
    // Attributes.
    while (true) {
      while (j < html.size() && std::isspace(static_cast<unsigned char>(html[j]))) ++j;
      if (j >= html.size()) return fail("unterminated tag <" + t.name);
      if (html[j] == '>') {
        ++j;
        break;
      }
      if (html.compare(j, 2, "/>") == 0) {
        t.self_closing = true;
        j += 2;
        break;
      }
      size_t an = j;
      while (j < html.size() && !std::isspace(static_cast<unsigned char>(html[j])) && html[j] != '=' &&
             html[j] != '>' && html[j] != '/') {
        if (html[j] == '"' || html[j] == '\'' || html[j] == '<') return fail("bad attribute name in <" + t.name);
        ++j;
      }
      std::string attr = html.substr(an, j - an);
      if (attr.empty()) return fail("empty attribute name in <" + t.name);
      std::string value;
      if (j < html.size() && html[j] == '=') {
        ++j;
        if (j >= html.size() || html[j] != '"') return fail("unquoted attribute " + attr + " in <" + t.name);
        size_t end = html.find('"', j + 1);
        if (end == std::string::npos) return fail("unterminated attribute " + attr);
        value = html.substr(j + 1, end - j - 1);
        if (value.find('<') != std::string::npos) return fail("'<' inside attribute " + attr);
        j = end + 1;
      }
      if (t.attrs.count(attr)) return fail("duplicate attribute " + attr + " in <" + t.name);
      t.attrs[attr] = value;
    }
    i = j;
    if (t.closing) {
      if (stack.empty() || stack.back() != t.name) {
        return fail("</" + t.name + "> closes " + (stack.empty() ? std::string("nothing") : "<" + stack.back() + ">"));
      }
      stack.pop_back();
      t.depth = static_cast<int>(stack.size());
      tags->push_back(t);
      continue;
    }
    t.depth = static_cast<int>(stack.size());
    tags->push_back(t);
    if (t.self_closing || kVoid.count(t.name)) continue;
    if (t.name == "script" || t.name == "style") {
      const std::string close = "</" + t.name + ">";
      size_t end = html.find(close, i);
      if (end == std::string::npos) return fail("unterminated <" + t.name + ">");
      i = end + close.size();
      Tag c;
      c.name = t.name;
      c.closing = true;
      c.pos = end;
      c.depth = t.depth;
      tags->push_back(c);
      continue;
    }
    stack.push_back(t.name);
  }
  if (!stack.empty()) {
    *error = "unclosed <" + stack.back() + "> (" + std::to_string(stack.size()) + " open at end)";
    return false;
  }
  return true;
}

// The tags of the element with the given id, including its own start and end tags.
inline std::vector<Tag> subtree(const std::vector<Tag>& tags, const std::string& id) {
  std::vector<Tag> out;
  for (size_t i = 0; i < tags.size(); ++i) {
    auto it = tags[i].attrs.find("id");
    if (tags[i].closing || it == tags[i].attrs.end() || it->second != id) continue;
    const int depth = tags[i].depth;
    out.push_back(tags[i]);
    if (tags[i].self_closing) return out;
    for (size_t j = i + 1; j < tags.size(); ++j) {
      out.push_back(tags[j]);
      if (tags[j].closing && tags[j].depth == depth && tags[j].name == tags[i].name) return out;
    }
    return out;
  }
  return out;
}

inline size_t count(const std::vector<Tag>& tags, const std::string& name, const std::string& cls) {
  size_t n = 0;
  for (const auto& t : tags) {
    if (!t.closing && t.name == name && (cls.empty() || has_class(t, cls))) ++n;
  }
  return n;
}

inline std::vector<Tag> select(const std::vector<Tag>& tags, const std::string& name, const std::string& cls) {
  std::vector<Tag> out;
  for (const auto& t : tags) {
    if (!t.closing && t.name == name && (cls.empty() || has_class(t, cls))) out.push_back(t);
  }
  return out;
}

}  // namespace report_test
}  // namespace lockcheck
