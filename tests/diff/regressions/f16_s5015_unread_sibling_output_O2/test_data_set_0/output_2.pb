
Bmul_78J"1