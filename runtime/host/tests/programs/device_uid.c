// omp_get_uid_from_device / omp_get_device_from_uid: every device and the
// initial device ("HOST") have a distinct UID that maps back to their number;
// omp_invalid_device has none; an unknown UID is omp_invalid_device.
#include <omp.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  int n = omp_get_num_devices(), host = omp_get_initial_device();
  int roundTrips = 0, distinct = 1;
  for (int d = 0; d < n; ++d) {
    const char *uid = omp_get_uid_from_device(d);
    if (uid && omp_get_device_from_uid(uid) == d)
      roundTrips++;
    for (int e = 0; e < d; ++e)
      if (uid && strcmp(uid, omp_get_uid_from_device(e)) == 0)
        distinct = 0;
  }
  printf("devices whose uid maps back: %s\n", roundTrips == n && n > 0 ? "all" : "NOT all");
  printf("uids distinct: %s\n", distinct ? "yes" : "no");
  const char *h = omp_get_uid_from_device(host);
  printf("initial device uid: %s\n", h ? h : "(null)");
  printf("HOST maps to the initial device: %s\n",
         omp_get_device_from_uid("HOST") == host ? "yes" : "no");
  printf("uid of omp_invalid_device: %s\n",
         omp_get_uid_from_device(omp_invalid_device) ? "non-null" : "null");
  printf("device of a null uid: %d\n", omp_get_device_from_uid(NULL));
  printf("device of an unknown uid: %d\n", omp_get_device_from_uid("no-such-device-uid"));
  return 0;
}
