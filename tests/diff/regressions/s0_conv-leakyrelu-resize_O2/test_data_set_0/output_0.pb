B
resize_109J@{fЊЅ{fЊЅШT]ЅШT]Ѕ?WoЅ?WoЅLиЃЅLиЃЅ{fЊЅ{fЊЅШT]ЅШT]Ѕ?WoЅ?WoЅLиЃЅLиЃЅ