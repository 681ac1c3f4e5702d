// Sorting sequences that come nearly in order (intervals recorded as a history streams by, mostly in time order,
// a few out of place): the elements that keep the order so far are kept in place, the others set aside, sorted
// and merged back. O(n) for a sorted sequence, O(n + k log k) with k out of place, never worse than a sort.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace lockcheck {

// Sorts v by operator<. REQUIRES: no two elements are equivalent (e.g. (time, position) pairs), so that the
// result is the one order every sort gives.
template <class T>
void sort_nearly_sorted(std::vector<T>* v) {
  size_t first_out = 0;
  while (first_out + 1 < v->size() && !((*v)[first_out + 1] < (*v)[first_out])) ++first_out;
  if (first_out + 1 >= v->size()) return;  // already sorted
  // run holds nearly everything: reserved once, so that growing it neither copies nor touches twice the pages.
  std::vector<T> run, rest;
  run.reserve(v->size());
  run.assign(v->begin(), v->begin() + static_cast<std::ptrdiff_t>(first_out) + 1);
  for (size_t i = first_out + 1; i < v->size(); ++i) {
    if (!((*v)[i] < run.back())) {
      run.push_back(std::move((*v)[i]));
    } else {
      rest.push_back(std::move((*v)[i]));
    }
  }
  std::sort(rest.begin(), rest.end());
  std::merge(std::make_move_iterator(run.begin()), std::make_move_iterator(run.end()),
             std::make_move_iterator(rest.begin()), std::make_move_iterator(rest.end()), v->begin());
}

// The positions of keys in increasing key order, ties in position order: a stable sort's permutation.
inline std::vector<size_t> stable_order(const std::vector<int64_t>& keys) {
  std::vector<std::pair<int64_t, size_t>> p(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) p[i] = {keys[i], i};
  sort_nearly_sorted(&p);
  std::vector<size_t> order(keys.size());
  for (size_t i = 0; i < p.size(); ++i) order[i] = p[i].second;
  return order;
}

}  // namespace lockcheck
