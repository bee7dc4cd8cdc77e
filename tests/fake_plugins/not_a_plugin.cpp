// A shared library without Strata's entry points: the loader must reject it by name, not crash.
extern "C" __attribute__((visibility("default"))) int some_other_library_function(int x) { return x + 1; }
