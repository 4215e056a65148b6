// A C++ lambda that captures mapped variables by reference: clang lowers each
// capture as a LITERAL | PTR_AND_OBJ | IMPLICIT member of the lambda, and the
// runtime must point the device lambda's fields at the device copies.
#include <cstdio>

int main() {
  int b = 5;
  int arr[3] = {1, 2, 3};
  auto g = [&b, &arr]() {
    b += arr[2];
    arr[0] = 10;
  };
  #pragma omp target map(tofrom: b, arr)
  g();
  double sum = 0, w[4] = {0.5, 1.5, 2.5, 3.5};
  auto add = [&](int i) { sum += w[i]; };
  #pragma omp target map(tofrom: sum) map(to: w)
  for (int i = 0; i < 4; ++i) add(i);
  std::printf("b=%d arr0=%d sum=%.1f\n", b, arr[0], sum);
  return b == 8 && arr[0] == 10 && sum == 8.0 ? 0 : 3;
}
